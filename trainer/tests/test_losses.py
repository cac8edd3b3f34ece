"""Loss math against hand-computed values."""

import math

import pytest
import torch

from attune_trainer.update import losses as L


def test_grpo_normalisation_hand_values():
    r = torch.tensor([1.0, 0.0, 0.5, 0.2, 0.4])
    adv = L.grpo_advantages(r, ["a", "a", "a", "b", "b"], eps=0.0)
    # group a: mean 0.5, sample std 0.5 -> [1, -1, 0]; group b: mean 0.3, std sqrt(0.02)
    sb = math.sqrt(0.02)
    assert adv.tolist() == pytest.approx([1.0, -1.0, 0.0, -0.1 / sb, 0.1 / sb], abs=1e-6)
    # eps enters the denominator
    adv_eps = L.grpo_advantages(r[:3], ["a"] * 3, eps=0.5)
    assert adv_eps.tolist() == pytest.approx([0.5, -0.5, 0.0], abs=1e-6)
    # without std normalisation: centred rewards (Dr. GRPO style)
    c = L.grpo_advantages(r, ["a", "a", "a", "b", "b"], normalize_std=False)
    assert c.tolist() == pytest.approx([0.5, -0.5, 0.0, -0.1, 0.1], abs=1e-6)


def test_grpo_singleton_and_zero_std_groups_get_zero_advantage():
    r = torch.tensor([0.9, 0.3, 0.3, 0.3, 0.7, 0.1])
    adv = L.grpo_advantages(r, ["solo", "same", "same", "same", "x", "x"])
    assert adv[0] == 0.0  # group of size 1
    assert adv[1:4].tolist() == [0.0, 0.0, 0.0]  # zero std
    assert adv[4] > 0 and adv[5] < 0
    assert torch.isfinite(adv).all()


def test_clipped_surrogate_hand_values():
    old = torch.zeros(4)
    logp = torch.log(torch.tensor([1.5, 0.5, 0.5, 1.5]))
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0])
    loss, ratio, clipped = L.clipped_surrogate(logp, old, adv, 0.2)
    assert ratio.tolist() == pytest.approx([1.5, 0.5, 0.5, 1.5])
    # max(-A r, -A clip(r)): A>0,r=1.5 -> -1.2 (clipped); A>0,r=.5 -> -.5; A<0,r=.5 -> .8 (clipped); A<0,r=1.5 -> 1.5
    assert loss.tolist() == pytest.approx([-1.2, -0.5, 0.8, 1.5], abs=1e-6)
    assert clipped.tolist() == [1.0, 0.0, 1.0, 0.0]
    # clipped tokens carry no gradient
    lp = logp.clone().requires_grad_(True)
    loss, _, _ = L.clipped_surrogate(lp, old, adv, 0.2)
    loss.sum().backward()
    assert lp.grad[0] == 0 and lp.grad[2] == 0 and lp.grad[1] != 0 and lp.grad[3] != 0


def test_ratio_is_one_when_old_equals_new():
    logp = torch.randn(3, 5)
    loss, ratio, clipped = L.clipped_surrogate(logp, logp.clone(), torch.ones(3, 5), 0.2)
    assert torch.allclose(ratio, torch.ones(3, 5)) and clipped.sum() == 0
    assert torch.allclose(loss, -torch.ones(3, 5))


def test_gae_hand_values():
    mask = torch.tensor([[0.0, 1.0, 1.0, 1.0, 0.0]])  # prompt, 3 completion tokens, padding
    values = torch.tensor([[9.0, 0.1, 0.2, 0.3, 9.0]])  # masked positions must not leak in
    rewards = L.last_token_rewards(torch.tensor([1.0]), mask)
    assert rewards.tolist() == [[0.0, 0.0, 0.0, 1.0, 0.0]]
    adv, ret = L.gae(rewards, values, mask, gamma=0.9, lam=0.8)
    # t=3: 1 - .3 = .7 ; t=2: .9*.3-.2=.07 + .72*.7 = .574 ; t=1: .9*.2-.1=.08 + .72*.574 = .49328
    assert adv[0].tolist() == pytest.approx([0.0, 0.49328, 0.574, 0.7, 0.0], abs=1e-6)
    assert ret[0].tolist() == pytest.approx([0.0, 0.59328, 0.774, 1.0, 0.0], abs=1e-6)
    # paper defaults gamma = lam = 1: A_t = R - V_t, returns = R
    adv1, ret1 = L.gae(rewards, values, mask, 1.0, 1.0)
    assert adv1[0, 1:4].tolist() == pytest.approx([0.9, 0.8, 0.7], abs=1e-6)
    assert ret1[0, 1:4].tolist() == pytest.approx([1.0, 1.0, 1.0], abs=1e-6)


def test_whiten():
    x = torch.tensor([[1.0, 2.0, 3.0, 100.0]])
    m = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    w = L.whiten(x, m, eps=0.0)
    assert w[0, :3].tolist() == pytest.approx([-1.0, 0.0, 1.0], abs=1e-6) and w[0, 3] == 0


def test_kl_k3_hand_values_and_unbiasedness():
    v = L.kl_k3(torch.log(torch.tensor([0.5, 0.3])), torch.log(torch.tensor([0.25, 0.3])))
    d = math.log(0.5)
    assert v.tolist() == pytest.approx([math.exp(d) - d - 1, 0.0], abs=1e-6)
    assert (v >= 0).all()
    # E_{x~p}[k3] = KL(p || q)
    p = torch.tensor([0.6, 0.3, 0.1])
    q = torch.tensor([0.2, 0.5, 0.3])
    exact = float((p * (p / q).log()).sum())
    expect = float((p * L.kl_k3(p.log(), q.log())).sum())
    assert expect == pytest.approx(exact, rel=1e-5)


def test_clipped_value_loss_hand_values():
    v = torch.tensor([1.0, 0.0])
    old = torch.tensor([0.0, 0.0])
    ret = torch.tensor([0.0, 1.0])
    loss, clipped = L.clipped_value_loss(v, old, ret, 0.2)
    # row 0: (1-0)^2=1 vs (0.2-0)^2=.04 -> .5*1 ; row 1: (0-1)^2 = 1 both -> .5
    assert loss.tolist() == pytest.approx([0.5, 0.5]) and clipped.tolist() == [0.0, 0.0]
    v2 = torch.tensor([0.5])
    loss2, clipped2 = L.clipped_value_loss(v2, torch.tensor([0.0]), torch.tensor([1.0]), 0.2)
    # unclipped (0.5-1)^2=.25, clipped (0.2-1)^2=.64 -> .5*.64
    assert loss2.tolist() == pytest.approx([0.32]) and clipped2.tolist() == [1.0]


def test_token_logprobs_and_entropy():
    logits = torch.randn(2, 3, 7)
    tgt = torch.randint(0, 7, (2, 3))
    lp, ent = L.token_logprobs(logits, tgt, temperature=2.0)
    ref = torch.log_softmax(logits / 2.0, -1).gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(lp, ref, atol=1e-6)
    p = torch.softmax(logits / 2.0, -1)
    assert torch.allclose(ent, -(p * p.log()).sum(-1), atol=1e-5)


def test_warmup():
    assert L.warmup_lr(1e-6, 1, 4) == pytest.approx(2.5e-7)
    assert L.warmup_lr(1e-6, 4, 4) == pytest.approx(1e-6)
    assert L.warmup_lr(1e-6, 9, 4) == pytest.approx(1e-6)
    assert L.warmup_lr(1e-6, 1, 0) == 1e-6


def test_grpo_counts_each_dialogue_once_in_group_statistics():
    # Group g: dialogue A (reward 1, three turns) and dialogue B (reward 0, one turn).
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0])
    groups = ["g", "g", "g", "g"]
    by_dialogue = L.grpo_advantages(rewards, groups, eps=0.0, trajectories=["A", "A", "A", "B"])
    # Two dialogues, rewards 1 and 0: mean 0.5, sample std ~0.7071 -> +-0.7071 for every turn.
    assert torch.allclose(by_dialogue, torch.tensor([0.70710677, 0.70710677, 0.70710677, -0.70710677]), atol=1e-6)
    # Per sample, the three turns of A would dominate the mean (0.75) and shift both advantages.
    per_sample = L.grpo_advantages(rewards, groups, eps=0.0)
    assert not torch.allclose(per_sample, by_dialogue)


def test_grpo_single_dialogue_group_has_zero_advantage_whatever_its_turn_count():
    rewards = torch.tensor([0.3, 0.3])
    out = L.grpo_advantages(rewards, ["g", "g"], trajectories=["A", "A"])
    assert torch.equal(out, torch.zeros(2))
