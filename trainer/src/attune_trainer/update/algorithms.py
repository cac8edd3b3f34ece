"""Algorithms by name: each says which advantage estimator and which policy loss it uses, and whether it
trains a critic. `RunCreate.algorithm` accepts exactly these names.

Adding an algorithm: its policy loss (if new) registered here, its entry in `ALGORITHMS`, and the name in the
orchestrator's one `Algorithm` list. Advantage estimators are registered in `advantages.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from attune_trainer.update import losses

if TYPE_CHECKING:
    from attune_trainer.service.schemas import Hyperparameters

# (logp, old_logp, advantages, hyperparameters) -> per-token (loss, ratio, clipped)
PolicyLoss = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, "Hyperparameters"], tuple[torch.Tensor, torch.Tensor, torch.Tensor]
]
POLICY_LOSSES: dict[str, PolicyLoss] = {}


def register_policy_loss(name: str) -> Callable[[PolicyLoss], PolicyLoss]:
    def register(fn: PolicyLoss) -> PolicyLoss:
        if name in POLICY_LOSSES:
            raise ValueError(f"policy loss {name!r} is registered twice")
        POLICY_LOSSES[name] = fn
        return fn

    return register


@register_policy_loss("clipped_surrogate")
def clipped_surrogate(logp, old_logp, advantages, hp: Hyperparameters):
    """PPO's clipped surrogate (GRPO uses it too), clip epsilon `clip_ratio`."""
    return losses.clipped_surrogate(logp, old_logp, advantages, hp.clip_ratio)


@dataclass(frozen=True)
class Algorithm:
    advantage_estimator: str  # a name in advantages.ADVANTAGE_ESTIMATORS
    policy_loss: str  # a name in POLICY_LOSSES
    critic: bool  # trains a value model next to the policy (its values feed the estimator)


ALGORITHMS: dict[str, Algorithm] = {
    "grpo": Algorithm(advantage_estimator="grpo", policy_loss="clipped_surrogate", critic=False),
    "ppo": Algorithm(advantage_estimator="gae", policy_loss="clipped_surrogate", critic=True),
}
ALGORITHM_NAMES: tuple[str, ...] = tuple(ALGORITHMS)


def policy_loss_for(algorithm: str) -> PolicyLoss:
    return POLICY_LOSSES[ALGORITHMS[algorithm].policy_loss]
