"""Credit by turn in the trainer gives the advantages the orchestrator's credit gave before it moved.

The fixture was recorded from the code before the move: for six dialogues (two groups, a malformed
ending that zeroes the reward, an unanalysed turn) and five credit settings, the rewards and
trajectories the orchestrator sent per turn, and the advantages the trainer's grpo and gae
estimators computed from them. Now the orchestrator sends each turn's raw emotion change with the
dialogue's reward, and the trainer's credit assignment must reproduce the same numbers exactly.
"""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from attune_trainer.contract.schemas import CreditSettings, Hyperparameters, Sample
from attune_trainer.update.advantages import AdvantageInputs, gae, grpo
from attune_trainer.update.credit import assign_credit

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "turn_credit_golden.json").read_text())
CASES = GOLDEN["cases"]


def _raw_samples() -> list[Sample]:
    """Every assistant turn as the orchestrator sends it now: the dialogue's reward, its id, and the turn."""
    return [
        Sample(
            prompt=turn["prompt"],
            completion=turn["completion"],
            reward=d["reward"],
            group=d["group"],
            trajectory=d["id"],
            turn={"index": i, "emotion_change": turn["emotion_change"], "final_emotion": d["final_emotion"]},
        )
        for d in GOLDEN["dialogues"]
        for i, turn in enumerate(d["turns"])
    ]


# the token counts and critic values the fixture was recorded with
def _tokens(i):
    return 1 + (i * 7) % 4


def _values(i):
    return torch.tensor([0.03 * ((i + k) % 5) - 0.05 for k in range(_tokens(i))], dtype=torch.float32)


def _inputs(samples, with_values):
    n = len(samples)
    return AdvantageInputs(
        samples=samples,
        rewards=torch.tensor([s.reward for s in samples], dtype=torch.float32),
        encoded=[SimpleNamespace(n_completion=_tokens(i)) for i in range(n)],
        mine=list(range(n)),
        old_values={i: _values(i) for i in range(n)} if with_values else {},
        hp=Hyperparameters(),
        device=torch.device("cpu"),
        all_reduce=lambda x: x,
    )


def _case_id(case):
    c = case["credit"]
    return f"{c['mode']}-discount{c['turn_discount']}-weight{c['weight']}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_credit_gives_the_recorded_rewards_and_advantages(case):
    credited = assign_credit(_raw_samples(), CreditSettings(**case["credit"]))
    assert [s.reward for s in credited] == case["rewards"]
    assert [s.trajectory for s in credited] == case["trajectories"]
    n = len(credited)
    g = grpo(_inputs(credited, with_values=False))
    assert [g.advantages[i].tolist() for i in range(n)] == case["grpo_advantages"]
    p = gae(_inputs(credited, with_values=True))
    assert [p.advantages[i].tolist() for i in range(n)] == case["gae_advantages"]
    assert [p.returns[i].tolist() for i in range(n)] == case["gae_returns"]


def test_the_golden_cases_differ_from_each_other():
    # guards the fixture itself: a credit that ignored its settings could not pass every case
    assert len({json.dumps(c["grpo_advantages"]) for c in CASES}) == len(CASES)


def test_every_credit_mode_of_the_contract_is_registered():
    from attune_trainer.contract.schemas import CREDIT_MODES
    from attune_trainer.update.credit import CREDIT_ASSIGNMENTS

    assert tuple(CREDIT_ASSIGNMENTS) == CREDIT_MODES
