"""Off-policy correction (decoupled PPO): samples drawn from an older published version than the
weights being updated.

Three policies meet in a step: the behaviour policy (the sampler, whose log-probs come with the
sample), the proximal policy (the trainer's weights before the update, PPO's "old" policy) and the
policy being updated. The clipped surrogate keeps its ratio to the proximal policy; each token's
policy loss is multiplied by the importance weight `min(exp(logp_prox - logp_behav), C)`
(`is_truncation` = C), a constant for the update. On-policy the two log-probs agree up to
numerics, so the weights are 1 within float tolerance.

Both log-probs are of the raw distribution (temperature 1): the sampler reports those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch

from attune_trainer.contract.errors import InvalidRequest
from attune_trainer.contract.schemas import Sample


def staleness(samples: list[Sample], step: int) -> list[int]:
    """Per sample: how many versions the sampling weights are behind the ones this step updates
    (`step - 1`). A sample without `policy_version` counts as on-policy (0)."""
    current = step - 1
    out = []
    for i, sample in enumerate(samples):
        if sample.policy_version is None:
            out.append(0)
            continue
        if sample.policy_version > current:
            raise InvalidRequest(
                f"samples.{i}.policy_version",
                f"policy_version {sample.policy_version} is newer than the weights step {step} updates "
                f"(version {current})",
            )
        out.append(current - sample.policy_version)
    return out


def staleness_histogram(values: list[int]) -> dict[str, int]:
    """Sample counts by staleness, keys as decimal strings (JSON object keys), ascending."""
    counts = Counter(values)
    return {str(k): counts[k] for k in sorted(counts)}


def raw_weights(sample: Sample, prox_logp: torch.Tensor) -> torch.Tensor | None:
    """exp(logp_prox - logp_behav) per completion token the sampler reported (a completion cut to
    `max_length` keeps its prefix), float64 on the CPU; None without sampler log-probs."""
    if sample.completion_logprobs is None:
        return None
    n = min(len(sample.completion_logprobs), int(prox_logp.numel()))
    behaviour = torch.tensor(sample.completion_logprobs[:n], dtype=torch.float64)
    return torch.exp(prox_logp[:n].detach().double().cpu() - behaviour)


def applied_weights(raw: torch.Tensor | None, n_tokens: int, cap: float, device) -> torch.Tensor:
    """The weights the policy loss is multiplied by: truncated at `cap`; 1 where the sampler gave
    no log-prob (a sample without them is taken as on-policy)."""
    out = torch.ones(n_tokens, dtype=torch.float32, device=device)
    if raw is not None and raw.numel() > 0:
        out[: raw.numel()] = raw.clamp(max=cap).to(device=device, dtype=torch.float32)
    return out


def weight_report(
    n_samples: int,
    raw: dict[int, torch.Tensor],
    cap: float,
    stale: list[int],
    all_reduce: Callable[[torch.Tensor], torch.Tensor],
) -> dict:
    """Step metrics: `staleness_histogram`, and over the tokens with sampler log-probs the mean and
    max importance weight before truncation and the share of tokens truncated (null when none).
    `raw` holds this rank's samples; the per-sample rows are combined over ranks."""
    # per sample: [max weight, sum of weights, truncated tokens, tokens weighed]
    table = torch.zeros((n_samples, 4), dtype=torch.float64)
    for i, w in raw.items():
        if w.numel() > 0:
            table[i] = torch.tensor([float(w.max()), float(w.sum()), float((w > cap).sum()), float(w.numel())])
    table = all_reduce(table).cpu()
    weighed = float(table[:, 3].sum())
    has = table[:, 3] > 0
    return {
        "staleness_histogram": staleness_histogram(stale),
        "is_weight_mean": float(table[:, 1].sum()) / weighed if weighed > 0 else None,
        "is_weight_max": float(table[has, 0].max()) if weighed > 0 else None,
        "is_truncated_share": float(table[:, 2].sum()) / weighed if weighed > 0 else None,
    }
