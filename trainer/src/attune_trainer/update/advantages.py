"""Advantage estimators, chosen by name from a registry (as verl's `register_adv_est`).

Each estimator gets a step's samples and returns, for this rank's samples, per-token advantages
and (for a critic) per-token returns, both over the completion tokens only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from attune_trainer.contract.algorithms import ALGORITHMS
from attune_trainer.contract.schemas import Hyperparameters, Sample
from attune_trainer.encoding import Encoded
from attune_trainer.update import losses


@dataclass
class AdvantageInputs:
    samples: list[Sample]
    rewards: torch.Tensor  # one per sample, float32
    encoded: list[Encoded]
    mine: list[int]  # indices of this rank's samples
    old_values: dict[int, torch.Tensor]  # critic values per completion token (empty without a critic)
    hp: Hyperparameters
    device: torch.device
    all_reduce: Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Advantages:
    advantages: dict[int, torch.Tensor]
    returns: dict[int, torch.Tensor]


AdvantageEstimator = Callable[[AdvantageInputs], Advantages]
ADVANTAGE_ESTIMATORS: dict[str, AdvantageEstimator] = {}


def register_advantage_estimator(name: str) -> Callable[[AdvantageEstimator], AdvantageEstimator]:
    def register(fn: AdvantageEstimator) -> AdvantageEstimator:
        if name in ADVANTAGE_ESTIMATORS:
            raise ValueError(f"advantage estimator {name!r} is registered twice")
        ADVANTAGE_ESTIMATORS[name] = fn
        return fn

    return register


def estimator_for(algorithm: str) -> AdvantageEstimator:
    return ADVANTAGE_ESTIMATORS[ALGORITHMS[algorithm].advantage_estimator]


@register_advantage_estimator("grpo")
def grpo(inputs: AdvantageInputs) -> Advantages:
    """Group-normalised sequence reward, the same on every completion token of the sample."""
    hp = inputs.hp
    per_sample = losses.grpo_advantages(
        inputs.rewards,
        [s.group for s in inputs.samples],
        hp.advantage_eps,
        hp.normalize_advantage_std,
        trajectories=[s.trajectory for s in inputs.samples],
    )
    advantages = {
        i: torch.full((inputs.encoded[i].n_completion,), float(per_sample[i]), device=inputs.device)
        for i in inputs.mine
    }
    return Advantages(advantages, {})


@register_advantage_estimator("gae")
def gae(inputs: AdvantageInputs) -> Advantages:
    """GAE over the critic's values with the reward on the last token; whitened over the whole step."""
    hp = inputs.hp
    advantages: dict[int, torch.Tensor] = {}
    returns: dict[int, torch.Tensor] = {}
    for i in inputs.mine:
        all_tokens = torch.ones(1, inputs.encoded[i].n_completion, device=inputs.device)
        token_rewards = losses.last_token_rewards(inputs.rewards[i : i + 1].to(inputs.device), all_tokens)
        adv, ret = losses.gae(token_rewards, inputs.old_values[i].unsqueeze(0), all_tokens, hp.gamma, hp.lam)
        advantages[i], returns[i] = adv[0], ret[0]
    if hp.whiten_advantages:
        mean, var = _moments_across_ranks([advantages[i] for i in inputs.mine], inputs.device, inputs.all_reduce)
        for i in inputs.mine:
            a = advantages[i].double()
            advantages[i] = losses.whiten(a, torch.ones_like(a), eps=1e-8, mean=mean, var=var).float()
    return Advantages(advantages, returns)


def _moments_across_ranks(parts: list[torch.Tensor], device, all_reduce) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and unbiased variance (float64) of all ranks' tokens together."""
    sums = torch.zeros(3, dtype=torch.float64, device=device)  # sum, sum of squares, count
    for x in parts:
        sums[0] += x.double().sum()
        sums[1] += (x.double() ** 2).sum()
        sums[2] += x.numel()
    sums = all_reduce(sums)
    n = sums[2].clamp_min(1.0)
    mean = sums[0] / n
    var = (sums[1] - n * mean**2) / (n - 1).clamp_min(1.0)
    return mean, var
