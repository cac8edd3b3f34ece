"""The math of one policy-gradient update, as pure tensor functions (tested by hand values).

Shapes: B = samples, T = positions (already shifted so that position t predicts token t+1 of the
input). `mask` is 1.0 on completion tokens and 0.0 on prompt and padding tokens: only
completion tokens carry loss. Per-token quantities are returned unreduced; the trainer sums them
and divides by the number of completion tokens of the optimizer update ("token-mean"), which keeps
gradient accumulation over micro-batches (and data-parallel ranks) equal to one big batch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import torch


def grpo_advantages(
    rewards: torch.Tensor,
    groups: Sequence[str],
    eps: float = 1e-6,
    normalize_std: bool = True,
    trajectories: Sequence[str] | None = None,
) -> torch.Tensor:
    """Group-normalised advantage: (r - mean_g) / (std_g + eps), std = sample std (n - 1).

    A group of size 1, or a group whose rewards are all equal, has advantage 0 for every member:
    there is nothing to compare against, so the step carries no gradient for it (only the KL and
    entropy terms act).
    """
    rewards = rewards.to(torch.float64)
    out = torch.zeros_like(rewards)
    index: OrderedDict[str, list[int]] = OrderedDict()
    for i, g in enumerate(groups):
        index.setdefault(g, []).append(i)
    for members in index.values():
        # Samples of one dialogue (same non-empty trajectory) count once in the group statistics:
        # a 10-turn dialogue must not outweigh a 2-turn one.
        units: OrderedDict[str, list[int]] = OrderedDict()
        for i in members:
            key = trajectories[i] if trajectories is not None and trajectories[i] else f"#{i}"
            units.setdefault(key, []).append(i)
        if len(units) < 2:
            continue
        firsts = torch.tensor([u[0] for u in units.values()])
        r = rewards[firsts]
        centred = r - r.mean()
        if normalize_std:
            std = r.std(unbiased=True)
            if std.item() == 0.0:
                continue
            centred = centred / (std + eps)
        for value, unit in zip(centred, units.values(), strict=True):
            out[torch.tensor(unit)] = value
    return out.to(torch.float32)


def last_token_rewards(rewards: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level rewards: the sample's reward on its last completion token, 0 elsewhere."""
    T = mask.shape[1]
    positions = torch.arange(T, device=mask.device).expand_as(mask)
    last = torch.where(mask > 0, positions, torch.full_like(positions, -1)).max(dim=1).values
    out = torch.zeros_like(mask, dtype=torch.float32)
    has = last >= 0
    out[has.nonzero(as_tuple=True)[0], last[has]] = rewards[has].to(torch.float32)
    return out


def gae(
    token_rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over the completion tokens of each row.

    delta_t = r_t + gamma * V_{t+1} - V_t (V after the last completion token = 0);
    A_t = delta_t + gamma * lam * A_{t+1}; returns R_t = A_t + V_t. Masked positions are skipped
    (they neither receive nor pass on values). With gamma = lam = 1 and a single final reward R,
    A_t = R - V_t and R_t = R for every completion token.
    """
    B, T = mask.shape
    adv = torch.zeros(B, T, dtype=torch.float32, device=mask.device)
    next_value = torch.zeros(B, dtype=torch.float32, device=mask.device)
    last_gae = torch.zeros(B, dtype=torch.float32, device=mask.device)
    values = values.to(torch.float32)
    for t in reversed(range(T)):
        m = mask[:, t].to(torch.float32)
        delta = token_rewards[:, t] + gamma * next_value - values[:, t]
        new_gae = delta + gamma * lam * last_gae
        last_gae = m * new_gae + (1 - m) * last_gae
        next_value = m * values[:, t] + (1 - m) * next_value
        adv[:, t] = last_gae * m
    returns = (adv + values) * mask
    return adv, returns


def whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8, mean=None, var=None) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) over masked entries (unbiased var), as verl does for PPO.

    `mean`/`var` may be passed in when computed across data-parallel ranks.
    """
    if mean is None or var is None:
        n = mask.sum()
        mean = (x * mask).sum() / n
        var = (((x - mean) ** 2) * mask).sum() / (n - 1).clamp_min(1.0)
    return (x - mean) * torch.rsqrt(var + eps) * mask


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0):
    """log p(target) and entropy per position, computed in fp32 from (B, T, V) logits."""
    logits = logits.float() / temperature
    logz = torch.logsumexp(logits, dim=-1)
    tgt = torch.gather(logits, -1, targets.unsqueeze(-1)).squeeze(-1)
    logp = tgt - logz
    probs = torch.softmax(logits, dim=-1)
    entropy = logz - (probs * logits).sum(-1)
    return logp, entropy


def clipped_surrogate(
    logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, clip_ratio: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO clipped objective per token, as a loss: max(-A r, -A clip(r, 1-e, 1+e)).

    Returns (loss, ratio, clipped) where clipped is 1.0 where the clipped branch was taken.
    """
    ratio = torch.exp(logp - old_logp)
    loss1 = -advantages * ratio
    loss2 = -advantages * torch.clamp(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio)
    loss = torch.maximum(loss1, loss2)
    clipped = (loss2 > loss1).to(torch.float32)
    return loss, ratio, clipped


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || ref) per token: exp(d) - d - 1 with d = ref - logp.

    Unbiased, always >= 0; clamped to [-20, 20] in d for stability.
    """
    d = torch.clamp(ref_logp - logp, -20.0, 20.0)
    return torch.exp(d) - d - 1.0


def clipped_value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """0.5 * max((V - R)^2, (clip(V, V_old - c, V_old + c) - R)^2) per token, and clipped flags."""
    v_clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    l1 = (values - returns) ** 2
    l2 = (v_clipped - returns) ** 2
    return 0.5 * torch.maximum(l1, l2), (l2 > l1).to(torch.float32)


def warmup_lr(base_lr: float, step: int, warmup_steps: int) -> float:
    """Linear warm-up over run steps (step is 1-based), then constant (the paper's schedule)."""
    if warmup_steps <= 0:
        return base_lr
    return base_lr * min(1.0, step / warmup_steps)
