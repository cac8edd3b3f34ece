"""Off-policy correction (decoupled PPO): each token's policy loss is weighted by
min(exp(logp_prox - logp_sampler), is_truncation); staleness per sample from `policy_version`."""

import json
import math

import pytest
import torch
from conftest import tiny_run
from test_sampled_tokens import _sampled

from attune_trainer.contract.errors import InvalidRequest
from attune_trainer.contract.schemas import Sample
from attune_trainer.update.off_policy import applied_weights, raw_weights, staleness, staleness_histogram


def _sample(**extra) -> Sample:
    return Sample.model_validate(
        {"prompt": [{"role": "user", "content": "hi"}], "completion": "ok", "reward": 0.5, **extra}
    )


def _policy(engine, run_id) -> dict[str, torch.Tensor]:
    policy = engine.loaded[run_id].policy
    return {k: v.detach().clone() for k, v in policy.named_parameters() if v.requires_grad}


def test_staleness_counts_versions_behind_the_weights_being_updated():
    samples = [_sample(policy_version=v) for v in (4, 3, 4, 1)] + [_sample()]
    stale = staleness(samples, step=5)
    assert stale == [0, 1, 0, 3, 0]
    assert staleness_histogram(stale) == {"0": 3, "1": 1, "3": 1}


def test_a_version_newer_than_the_weights_is_refused_naming_the_field():
    with pytest.raises(InvalidRequest) as e:
        staleness([_sample(policy_version=0), _sample(policy_version=2)], step=2)
    assert e.value.field == "samples.1.policy_version"


def test_a_sample_without_policy_version_hashes_as_before():
    old = {
        "prompt": [{"role": "user", "content": "hi"}],
        "completion": "ok",
        "reward": 0.5,
        "group": "",
        "trajectory": "",
    }
    assert Sample.model_validate(old).digest_form() == old


def test_weights_are_truncated_and_one_without_sampler_logprobs():
    sample = _sample(completion_ids=[1, 2, 3], completion_logprobs=[-1.0, -2.0, -4.0])
    prox = torch.tensor([-1.0, -1.5, -1.0])
    raw = raw_weights(sample, prox)
    assert raw.tolist() == pytest.approx([1.0, math.exp(0.5), math.exp(3.0)])
    assert applied_weights(raw, 4, 2.0, "cpu").tolist() == pytest.approx([1.0, math.exp(0.5), 2.0, 1.0])
    assert raw_weights(_sample(), prox) is None
    assert applied_weights(None, 2, 2.0, "cpu").tolist() == [1.0, 1.0]


def test_on_policy_weights_are_one_and_the_update_is_unchanged(engine):
    engine.create_run(tiny_run("with"))
    engine.create_run(tiny_run("without"))
    samples, _ = _sampled(engine, "with@0")
    samples = [{**s, "policy_version": 0} for s in samples]
    result = engine.apply_step("with", {"step": 1, "samples": samples})
    metrics = result["metrics"]
    assert metrics["is_weight_mean"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["is_weight_max"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["is_truncated_share"] == 0.0
    assert metrics["staleness_histogram"] == {"0": len(samples)}
    # the same step without the sampler's log-probs (weights exactly 1) gives the same update
    plain = [{k: v for k, v in s.items() if k != "completion_logprobs"} for s in samples]
    no_weights = engine.apply_step("without", {"step": 1, "samples": plain})["metrics"]
    assert no_weights["is_weight_mean"] is None and no_weights["is_truncated_share"] is None
    assert no_weights["staleness_histogram"] == {"0": len(samples)}
    a, b = _policy(engine, "with"), _policy(engine, "without")
    # AdamW's first update is about lr * sign(gradient) (1e-2 here), so a 1e-6 weight on a near-zero
    # gradient can move an element by a little: equal within 1 % of the update
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-4, msg=name)
    # the stored result (and a replay) carries the histogram
    replay = engine.apply_step("with", {"step": 1, "samples": samples})
    assert replay["replayed"] is True and replay["metrics"]["staleness_histogram"] == {"0": len(samples)}


def test_an_older_behaviour_logprob_gets_a_weight_and_truncation_applies(engine):
    engine.create_run(tiny_run("stale", is_truncation=2.0))
    engine.create_run(tiny_run("fresh", is_truncation=2.0))
    samples, ids = _sampled(engine, "stale@0")
    fresh = [dict(s) for s in samples]
    # sample 0: the sampler gave its tokens 0.5 less log-prob (weight e^0.5 ~ 1.65, kept);
    # sample 1: 3 less (weight e^3 ~ 20, truncated to 2)
    samples[0] = {**samples[0], "completion_logprobs": [lp - 0.5 for lp in samples[0]["completion_logprobs"]]}
    samples[1] = {**samples[1], "completion_logprobs": [lp - 3.0 for lp in samples[1]["completion_logprobs"]]}
    metrics = engine.apply_step("stale", {"step": 1, "samples": samples})["metrics"]
    n_tokens = sum(len(i) for i in ids)
    assert metrics["is_weight_max"] == pytest.approx(math.exp(3.0), rel=1e-3)
    assert metrics["is_truncated_share"] == pytest.approx(len(ids[1]) / n_tokens)
    expected_mean = len(ids[0]) * math.exp(0.5) + len(ids[1]) * math.exp(3.0) + (n_tokens - len(ids[0]) - len(ids[1]))
    assert metrics["is_weight_mean"] == pytest.approx(expected_mean / n_tokens, rel=1e-3)
    engine.apply_step("fresh", {"step": 1, "samples": fresh})
    a, b = _policy(engine, "stale"), _policy(engine, "fresh")
    assert any(not torch.allclose(a[k], b[k], rtol=1e-5, atol=1e-6) for k in a), "the weights change the update"


def test_a_run_created_before_is_truncation_existed_is_recreated_without_conflict(engine):
    created, _ = engine.create_run(tiny_run("old"))
    meta_path = engine.runs.store("old").dir / "run.json"
    meta = json.loads(meta_path.read_text())
    del meta["config"]["hyperparameters"]["is_truncation"]
    meta_path.write_text(json.dumps(meta))
    created_again, _ = engine.create_run(tiny_run("old"))
    assert created and not created_again
