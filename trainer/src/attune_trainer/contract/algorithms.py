"""Algorithms by name: each says which advantage estimator and which policy loss it uses, and whether it
trains a critic. `RunCreate.algorithm` accepts exactly these names; the run state reads `critic` from here.

Adding an algorithm: its entry in `ALGORITHMS`, its policy loss (if new) in `update/algorithms.py`, its
estimator (if new) in `update/advantages.py`, and the name in the orchestrator's one `Algorithm` list.
The names are data here so that every layer can read them; the functions they name live in `update/`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Algorithm:
    advantage_estimator: str  # a name in update.advantages.ADVANTAGE_ESTIMATORS
    policy_loss: str  # a name in update.algorithms.POLICY_LOSSES
    critic: bool  # trains a value model next to the policy (its values feed the estimator)


ALGORITHMS: dict[str, Algorithm] = {
    "grpo": Algorithm(advantage_estimator="grpo", policy_loss="clipped_surrogate", critic=False),
    "ppo": Algorithm(advantage_estimator="gae", policy_loss="clipped_surrogate", critic=True),
}
ALGORITHM_NAMES: tuple[str, ...] = tuple(ALGORITHMS)
