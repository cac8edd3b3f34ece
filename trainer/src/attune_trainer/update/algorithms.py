"""Policy losses by name, for the algorithms the contract names (`contract/algorithms.py`).

Adding an algorithm: its policy loss (if new) registered here, its entry in `contract.algorithms.ALGORITHMS`,
and the name in the orchestrator's one `Algorithm` list. Advantage estimators are registered in `advantages.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from attune_trainer.contract.algorithms import ALGORITHMS
from attune_trainer.update import losses

if TYPE_CHECKING:
    from attune_trainer.contract.schemas import Hyperparameters

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


def policy_loss_for(algorithm: str) -> PolicyLoss:
    return POLICY_LOSSES[ALGORITHMS[algorithm].policy_loss]
