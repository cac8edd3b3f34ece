"""Samples carry the sampler's token ids and log-probs: the trainer trains on exactly those ids, with
the prompt rendered as the sampler rendered it, and its log-probs before the update match the
sampler's (fp32, CPU); samples without ids are re-tokenised and marked so."""

import pytest
from conftest import tiny_run

from attune_trainer.contract.errors import InvalidRequest
from attune_trainer.contract.schemas import Sample
from attune_trainer.engine.steps import samples_digest
from attune_trainer.update.sampler_gap import completion_ids_sha256

PROMPTS = [
    [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "I feel lonely tonight"}],
    [{"role": "user", "content": "My boss yelled at me"}],
]


def _sampled(engine, model, prompts=PROMPTS, n=4, max_tokens=24, temperature=1.0):
    """(samples with ids and log-probs, the ids of each) from the trainer's own sampling."""
    samples, ids = [], []
    for p, prompt in enumerate(prompts):
        out = engine.chat(
            {
                "model": model,
                "messages": prompt,
                "max_tokens": max_tokens,
                "n": n,
                "seed": 11 + p,
                "temperature": temperature,
                "logprobs": True,
                "return_tokens_as_token_ids": True,
            }
        )
        for k, choice in enumerate(out["choices"]):
            content = choice["logprobs"]["content"]
            token_ids = [int(c["token"].removeprefix("token_id:")) for c in content]
            ids.append(token_ids)
            samples.append(
                {
                    "prompt": prompt,
                    "completion": choice["message"]["content"],
                    "completion_ids": token_ids,
                    "completion_logprobs": [c["logprob"] for c in content],
                    "reward": ((p * 5 + k * 3) % 7) / 7,
                    "group": f"g{p}",
                }
            )
    return samples, ids


def test_logprobs_follow_the_openai_shape_with_vllm_token_ids(engine):
    engine.create_run(tiny_run("r"))
    out = engine.chat({"model": "r", "messages": PROMPTS[1], "max_tokens": 16, "seed": 1, "logprobs": True, "n": 2})
    tok = engine.loaded["r"].tokenizer
    for choice in out["choices"]:
        content = choice["logprobs"]["content"]
        assert content, "one entry per sampled token"
        for entry in content:
            assert set(entry) >= {"token", "logprob", "bytes", "top_logprobs"}
            assert entry["logprob"] <= 0.0
    assert sum(len(c["logprobs"]["content"]) for c in out["choices"]) == out["usage"]["completion_tokens"]
    as_ids = engine.chat(
        {
            "model": "r",
            "messages": PROMPTS[1],
            "max_tokens": 16,
            "seed": 1,
            "logprobs": True,
            "return_tokens_as_token_ids": True,
            "n": 2,
        }
    )
    for plain, by_id in zip(out["choices"], as_ids["choices"], strict=True):
        ids = [int(e["token"].removeprefix("token_id:")) for e in by_id["logprobs"]["content"]]
        assert [e["token"] for e in plain["logprobs"]["content"]] == [tok.decode([t]) for t in ids]
        assert tok.decode(ids, skip_special_tokens=True) == by_id["message"]["content"]
    assert engine.chat({"model": "r", "messages": PROMPTS[1], "max_tokens": 4})["choices"][0]["logprobs"] is None


@pytest.mark.parametrize(
    "run",
    [tiny_run("full"), tiny_run("lora", lora={"r": 4}), tiny_run("warm", temperature=0.7)],
    ids=["full", "lora", "temperature-0.7"],
)
def test_trains_on_exactly_the_sampled_ids_and_the_gap_is_float_noise(engine, run):
    run_id = run["run_id"]
    engine.create_run(run)
    samples, ids = _sampled(engine, f"{run_id}@0")
    tok = engine.loaded[run_id].tokenizer
    eos = tok.eos_token_id
    # the issue: decoding and encoding again changes the tokens of most random completions
    retokenized = [tok(s["completion"], add_special_tokens=False)["input_ids"] for s in samples]
    assert sum(r != [t for t in i if t != eos] for r, i in zip(retokenized, ids, strict=True)) > 0

    result = engine.apply_step(run_id, {"step": 1, "samples": samples})
    trained = result["trained_samples"]
    assert len(trained) == len(samples)
    for record, sampled_ids in zip(trained, ids, strict=True):
        assert record["tokens"] == "sampled"
        assert record["completion_tokens"] == len(sampled_ids)
        assert record["completion_ids_sha256"] == completion_ids_sha256(sampled_ids)
        assert record["logprob_gap_max"] < 1e-4
    metrics = result["metrics"]
    assert metrics["retokenized_share"] == 0.0
    assert metrics["logprob_gap_max"] < 1e-4
    assert 0.0 <= metrics["logprob_gap_mean"] <= metrics["logprob_gap_max"]
    assert metrics["tokens"] == sum(len(i) for i in ids), "no end-of-turn token added to sampled ids"
    # a replay returns what was trained on
    replay = engine.apply_step(run_id, {"step": 1, "samples": samples})
    assert replay["replayed"] is True and replay["trained_samples"] == trained


def test_live_weights_after_a_step_give_the_same_gap(engine):
    engine.create_run(tiny_run("r"))
    first, _ = _sampled(engine, "r@0", n=2)
    engine.apply_step("r", {"step": 1, "samples": first})
    second, _ = _sampled(engine, "r", n=2)  # the live weights of step 1
    result = engine.apply_step("r", {"step": 2, "samples": second})
    assert result["metrics"]["logprob_gap_max"] < 1e-4


def test_samples_without_ids_are_retokenized_and_marked(engine):
    engine.create_run(tiny_run("r"))
    samples, ids = _sampled(engine, "r@0", n=2)
    plain = [{k: v for k, v in s.items() if k not in ("completion_ids", "completion_logprobs")} for s in samples[:2]]
    result = engine.apply_step("r", {"step": 1, "samples": plain + samples[2:]})
    tok = engine.loaded["r"].tokenizer
    trained = result["trained_samples"]
    for record, sample in zip(trained[:2], plain, strict=True):
        assert record["tokens"] == "retokenized"
        assert record["logprob_gap_max"] is None
        expected = tok(sample["completion"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        assert record["completion_ids_sha256"] == completion_ids_sha256(expected)
    assert [r["tokens"] for r in trained[2:]] == ["sampled"] * (len(samples) - 2)
    assert result["metrics"]["retokenized_share"] == pytest.approx(2 / len(samples))

    engine.create_run(tiny_run("old"))
    result = engine.apply_step("old", {"step": 1, "samples": plain})
    assert result["metrics"]["retokenized_share"] == 1.0
    assert result["metrics"]["logprob_gap_mean"] is None and result["metrics"]["logprob_gap_max"] is None


def test_a_sample_without_ids_hashes_as_before_they_existed():
    old = {"prompt": PROMPTS[1], "completion": "ok", "reward": 0.5, "group": "g", "trajectory": ""}
    # what `model_dump` gave before the fields existed: a step retried across the upgrade replays
    assert Sample.model_validate(old).digest_form() == old
    with_ids = Sample.model_validate({**old, "completion_ids": [1, 2], "completion_logprobs": [-1.0, -2.0]})
    assert samples_digest([with_ids.digest_form()]) != samples_digest([old])


def test_bad_ids_and_logprobs_are_refused_naming_the_field(engine):
    engine.create_run(tiny_run("r"))
    base = {"prompt": PROMPTS[1], "completion": "ok", "reward": 0.5}
    with pytest.raises(ValueError, match="completion_logprobs has 1 values for 2 completion_ids"):
        Sample.model_validate({**base, "completion_ids": [1, 2], "completion_logprobs": [-0.1]})
    with pytest.raises(ValueError, match="completion_logprobs needs completion_ids"):
        Sample.model_validate({**base, "completion_logprobs": [-0.1]})
    with pytest.raises(InvalidRequest) as e:
        engine.apply_step("r", {"step": 1, "samples": [{**base, "completion_ids": [5, 10**6]}]})
    assert e.value.field == "samples.0.completion_ids"
    assert "outside the vocabulary" in str(e.value)
