"""Credit by turn through the advantage estimators, on hand-made dialogues.

The orchestrator sends each turn's sample with its return (src/core/training/credit.ts): with
`final` every turn of a dialogue carries the dialogue's reward and its trajectory id, so GRPO
counts each dialogue once; with `turn` each carries its own return and an empty trajectory, so
GRPO normalises over all turns of the group. PPO puts the return on the turn's last token.
"""

import math
from types import SimpleNamespace

import pytest
import torch

from attune_trainer.contract.schemas import Hyperparameters, Sample
from attune_trainer.update.advantages import AdvantageInputs, gae, grpo


def _inputs(rewards, trajectories, tokens, values=None, **hp):
    samples = [
        Sample(prompt=[{"role": "user", "content": "u"}], completion="r", reward=r, group="g", trajectory=t)
        for r, t in zip(rewards, trajectories, strict=True)
    ]
    encoded = [SimpleNamespace(n_completion=n) for n in tokens]
    return AdvantageInputs(
        samples=samples,
        rewards=torch.tensor(rewards, dtype=torch.float32),
        encoded=encoded,
        mine=list(range(len(samples))),
        old_values=values or {},
        hp=Hyperparameters(**hp),
        device=torch.device("cpu"),
        all_reduce=lambda x: x,
    )


# Two dialogues of one group from emotion 30: A moves +20, -10, +40 (ends 80, reward 0.8);
# B moves +10 then -30 (ends 10, reward 0.1). Undiscounted turn returns: A [0.5, 0.3, 0.4], B [-0.2, -0.3].
A_TURN, B_TURN = [0.5, 0.3, 0.4], [-0.2, -0.3]


def test_grpo_final_credit_counts_each_dialogue_once():
    out = grpo(_inputs([0.8] * 3 + [0.1] * 2, ["a"] * 3 + ["b"] * 2, [2] * 5, advantage_eps=1e-9))
    # two units, 0.8 and 0.1: mean 0.45, sample std 0.35 * sqrt(2)
    a = 0.35 / (0.35 * math.sqrt(2))
    assert [float(out.advantages[i][0]) for i in range(5)] == pytest.approx([a, a, a, -a, -a], abs=1e-6)


def test_grpo_turn_credit_normalises_over_all_turns_of_the_group():
    returns = A_TURN + B_TURN
    out = grpo(_inputs(returns, [""] * 5, [3, 1, 2, 2, 4], advantage_eps=1e-9))
    mean = sum(returns) / 5
    std = math.sqrt(sum((r - mean) ** 2 for r in returns) / 4)
    expected = [(r - mean) / std for r in returns]
    for i, n in enumerate([3, 1, 2, 2, 4]):
        assert out.advantages[i].shape == (n,)
        assert out.advantages[i].tolist() == pytest.approx([expected[i]] * n, abs=1e-6)
    # the turn that lowered the emotion most in the good dialogue ranks below its neighbours
    assert out.advantages[1][0] < out.advantages[0][0] and out.advantages[1][0] < out.advantages[2][0]


def test_gae_puts_each_turn_return_on_its_last_token():
    values = {i: torch.tensor([0.1, 0.2]) for i in range(5)}
    returns = A_TURN + B_TURN
    out = gae(_inputs(returns, [""] * 5, [2] * 5, values, whiten_advantages=False, gamma=1.0, lam=1.0))
    for i, g in enumerate(returns):
        # gamma = lam = 1: A_t = G - V_t and the critic's targets are the turn's return
        assert out.advantages[i].tolist() == pytest.approx([g - 0.1, g - 0.2], abs=1e-6)
        assert out.returns[i].tolist() == pytest.approx([g, g], abs=1e-6)
    discounted = gae(_inputs([0.4], [""], [2], {0: torch.tensor([0.0, 0.0])}, whiten_advantages=False, gamma=0.5))
    # reward on the last token only: the first token sees it discounted once
    assert discounted.returns[0].tolist() == pytest.approx([0.2, 0.4], abs=1e-6)
