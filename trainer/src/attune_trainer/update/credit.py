"""Credit assignment by name: how a dialogue's reward is shared out over its assistant turns before the
advantage estimator sees the samples (`StepRequest.credit`; the names are `contract.schemas.CREDIT_MODES`).

- `final`: every turn is trained on the dialogue's reward (RLVER: the final emotion / 100), and GRPO
  counts each dialogue once (the samples keep their trajectory);
- `turn`: each turn's own reward is the emotion change it caused / 100, and it is trained on its return,
  the sum of its own and later turns' rewards discounted by `turn_discount` per turn; GRPO normalises
  over all turns of the group (each sample its own unit);
- `mixed`: `weight` x the turn return + (1 - weight) x the dialogue's reward, each turn its own unit.

A new mode: its function registered here and the name in `CREDIT_MODES` and the orchestrator's list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attune_trainer.contract.errors import InvalidRequest
from attune_trainer.contract.schemas import CreditSettings, Sample


@dataclass(frozen=True)
class Dialogue:
    changes: list[float]  # each turn's emotion change, in turn order
    reward: float  # the dialogue's reward (final emotion / 100, 0 when malformed)
    final_emotion: float


@dataclass(frozen=True)
class CreditAssignment:
    rewards: Callable[[Dialogue, CreditSettings], list[float]]  # what each turn is trained on, in turn order
    per_turn: bool  # each turn is its own unit in group statistics, not its dialogue


CREDIT_ASSIGNMENTS: dict[str, CreditAssignment] = {}


def register_credit(name: str, per_turn: bool) -> Callable:
    def register(fn: Callable[[Dialogue, CreditSettings], list[float]]):
        if name in CREDIT_ASSIGNMENTS:
            raise ValueError(f"credit assignment {name!r} is registered twice")
        CREDIT_ASSIGNMENTS[name] = CreditAssignment(rewards=fn, per_turn=per_turn)
        return fn

    return register


def turn_rewards(d: Dialogue) -> list[float]:
    """Each turn's own reward: its emotion change / 100. The last turn also carries the terminal part,
    reward - final_emotion / 100: 0 normally, and for a malformed ending the loss of everything the
    dialogue had, so the turn that broke the format is the one that pays for it."""
    rewards = [c / 100 for c in d.changes]
    if rewards:
        rewards[-1] += d.reward - d.final_emotion / 100
    return rewards


def discounted_returns(rewards: list[float], discount: float) -> list[float]:
    """G_t = r_t + discount x G_(t+1): each turn's discounted sum of rewards from it to the end."""
    returns = [0.0] * len(rewards)
    following = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        following = rewards[t] + discount * following
        returns[t] = following
    return returns


@register_credit("final", per_turn=False)
def final(d: Dialogue, _credit: CreditSettings) -> list[float]:
    return [d.reward for _ in d.changes]


@register_credit("turn", per_turn=True)
def turn(d: Dialogue, credit: CreditSettings) -> list[float]:
    return discounted_returns(turn_rewards(d), credit.turn_discount)


@register_credit("mixed", per_turn=True)
def mixed(d: Dialogue, credit: CreditSettings) -> list[float]:
    w = credit.weight
    return [w * g + (1 - w) * d.reward for g in turn(d, credit)]


def assign_credit(samples: list[Sample], credit: CreditSettings | None) -> list[Sample]:
    """The samples as trained: each turn's reward credited, the trajectory kept only where the
    dialogue is the unit, the turn dropped. Without `credit` the rewards are used as given."""
    if credit is None:
        return samples
    assignment = CREDIT_ASSIGNMENTS[credit.mode]
    rewards = [s.reward for s in samples]
    for dialogue, indices in _dialogues(samples, needs_turns=assignment.per_turn):
        for i, reward in zip(indices, assignment.rewards(dialogue, credit), strict=True):
            rewards[i] = reward
    return [
        s.model_copy(update={"reward": r, "trajectory": "" if assignment.per_turn else s.trajectory, "turn": None})
        for s, r in zip(samples, rewards, strict=True)
    ]


def _dialogues(samples: list[Sample], needs_turns: bool) -> list[tuple[Dialogue, list[int]]]:
    """The dialogues of the samples that carry a turn, each with its samples' indices in turn order."""
    by_trajectory: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        if s.turn is None:
            if needs_turns:
                raise InvalidRequest(f"samples.{i}.turn", f"samples.{i}.turn: credit by turn needs each turn")
            continue
        if not s.trajectory:
            raise InvalidRequest(f"samples.{i}.trajectory", f"samples.{i}.trajectory: a turn needs its dialogue's id")
        by_trajectory.setdefault(s.trajectory, []).append(i)
    return [_dialogue(samples, trajectory, indices) for trajectory, indices in by_trajectory.items()]


def _dialogue(samples: list[Sample], trajectory: str, indices: list[int]) -> tuple[Dialogue, list[int]]:
    ordered = sorted(indices, key=lambda i: samples[i].turn.index)
    if [samples[i].turn.index for i in ordered] != list(range(len(ordered))):
        raise InvalidRequest(
            f"samples.{ordered[0]}.turn.index",
            f"samples: the turns of dialogue {trajectory!r} are numbered "
            f"{sorted(samples[i].turn.index for i in ordered)}, not 0 to {len(ordered) - 1}",
        )
    first = samples[ordered[0]]
    for i in ordered:
        if (samples[i].reward, samples[i].turn.final_emotion) != (first.reward, first.turn.final_emotion):
            raise InvalidRequest(
                f"samples.{i}.reward",
                f"samples.{i}: the turns of dialogue {trajectory!r} differ in their reward or final emotion",
            )
    changes = [samples[i].turn.emotion_change for i in ordered]
    return Dialogue(changes=changes, reward=first.reward, final_emotion=first.turn.final_emotion), ordered
