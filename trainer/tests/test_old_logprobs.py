"""A step that is a single optimizer update takes its old log-probs from the training forward instead
of a separate no-grad pass over the policy: the metrics and the updated weights are those of the
separate pass, and the pass is really skipped (and kept when the weights change within the step)."""

import pytest
import torch
from conftest import tiny_run
from test_sampled_tokens import _sampled

from attune_trainer.contract.schemas import StepRequest
from attune_trainer.faults import FaultInjection
from attune_trainer.update.update import PolicyUpdate


def _samples(engine, with_sampler_logprobs: bool) -> list[dict]:
    """The trainer's own samples (ids and log-probs); some sampler log-probs made lower, so that
    importance weights differ from 1 and one sample's are truncated."""
    engine.create_run(tiny_run("sampler"))
    samples, _ = _sampled(engine, "sampler@0")
    if not with_sampler_logprobs:
        return [{k: v for k, v in s.items() if k != "completion_logprobs"} for s in samples]
    samples[0] = {**samples[0], "completion_logprobs": [lp - 0.3 for lp in samples[0]["completion_logprobs"]]}
    samples[1] = {**samples[1], "completion_logprobs": [lp - 3.0 for lp in samples[1]["completion_logprobs"]]}
    return samples


def _update(engine, run_id: str, samples: list[dict], allow_old_from_training: bool):
    """(metrics, weights after the update, policy forwards made without grad, whether the training
    forward gave the old log-probs)."""
    run = engine.ensure_loaded(run_id)
    no_grad_forwards = []
    hook = run.policy.register_forward_pre_hook(lambda *_: no_grad_forwards.append(not torch.is_grad_enabled()))
    try:
        update = PolicyUpdate(
            engine.compute, run, StepRequest.model_validate({"step": 1, "samples": samples}), FaultInjection()
        )
        metrics = update.apply(allow_old_from_training=allow_old_from_training)
    finally:
        hook.remove()
    models = {"policy": run.policy, "critic": run.critic}
    weights = {
        f"{kind}/{name}": p.detach().clone()
        for kind, model in models.items()
        if model is not None
        for name, p in model.named_parameters()
    }
    return metrics, weights, sum(no_grad_forwards), update.old_from_training


def _assert_same_metrics(fast: dict, old: dict) -> None:
    assert fast.keys() == old.keys()
    for key, value in old.items():
        if isinstance(value, float):
            assert fast[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
        else:
            assert fast[key] == value, key


CASES = {
    "grpo": dict(algorithm="grpo"),
    "grpo-temperature": dict(algorithm="grpo", temperature=0.7, is_truncation=2.0),
    "grpo-lora-kl": dict(algorithm="grpo", lora={"r": 4}, kl_coef=0.1, is_truncation=2.0),
    "ppo-kl": dict(algorithm="ppo", kl_coef=0.1, entropy_coef=0.01, is_truncation=2.0),
    "ppo-lora-temperature": dict(algorithm="ppo", lora={"r": 4}, temperature=0.8),
}


@pytest.mark.parametrize("with_sampler_logprobs", [True, False], ids=["sampler-logprobs", "no-sampler-logprobs"])
@pytest.mark.parametrize("case", list(CASES))
def test_old_logprobs_from_the_training_forward_give_the_separate_pass_results(engine, case, with_sampler_logprobs):
    samples = _samples(engine, with_sampler_logprobs)
    config = CASES[case]
    engine.create_run(tiny_run("fast", **config))
    engine.create_run(tiny_run("old", **config))
    fast, fast_weights, fast_no_grad, fused = _update(engine, "fast", samples, allow_old_from_training=True)
    old, old_weights, old_no_grad, separate = _update(engine, "old", samples, allow_old_from_training=False)
    assert fused and not separate
    # micro_batch_size 2: several micro-batches accumulate into the one update
    n_micro_batches = -(-len(samples) // 2)
    # what stays without grad is the LoRA reference (the policy with its adapter disabled)
    lora_ref = n_micro_batches if "lora" in config and config.get("kl_coef", 0) > 0 else 0
    assert fast_no_grad == lora_ref
    assert old_no_grad > lora_ref
    _assert_same_metrics(fast, old)
    assert fast["ratio_mean"] == 1.0 and fast["ppo_kl"] == 0.0 and fast["clip_fraction"] == 0.0
    if with_sampler_logprobs:
        assert fast["is_truncated_share"] > 0 and fast["logprob_gap_max"] > 0.2
    assert fast_weights.keys() == old_weights.keys()
    for name, value in old_weights.items():
        torch.testing.assert_close(fast_weights[name], value, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize(
    "config",
    [
        dict(ppo_epochs=2),
        dict(mini_batch_size=4),
        dict(lora={"r": 4, "dropout": 0.1}),
    ],
    ids=["two-epochs", "two-mini-batches", "lora-dropout"],
)
def test_the_separate_pass_stays_when_the_training_forward_cannot_give_the_old_logprobs(engine, config):
    samples = _samples(engine, with_sampler_logprobs=True)
    engine.create_run(tiny_run("several", **config))
    _, _, no_grad, fused = _update(engine, "several", samples, allow_old_from_training=True)
    assert not fused
    assert no_grad == -(-len(samples) // 2)
