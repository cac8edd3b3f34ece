"""Sampling decodes incrementally and holds the engine lock one token at a time: a long reply never
stalls a step, and a step applied mid-reply does not change the weights the reply is sampled from."""

import threading
import time

import pytest
from conftest import P, fixed_samples, tiny_run

from attune_trainer.serving.sampling import IncrementalText, find_stop


@pytest.fixture
def tok():
    from attune_trainer.tiny_tokenizer import build_tiny_tokenizer

    return build_tiny_tokenizer()


def test_incremental_text_equals_a_full_decode(tok):
    for text in ("I hear you, that sounds hard.", "naïve café — 令牌 ✓ 🙂 done", "  two  spaces\nand a line"):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        inc = IncrementalText(tok)
        pieces = [inc.append(t) for t in ids]
        assert inc.text == "".join(pieces) == tok.decode(ids, skip_special_tokens=True)


def test_find_stop_sees_a_stop_string_split_across_tokens():
    assert find_stop("hello wor", "wor", ["world"]) == -1
    assert find_stop("hello world", "ld", ["world"]) == 6
    assert find_stop("a STOP b END", " END", ["END", "STOP"]) == 9  # only what the new text completed
    assert find_stop("xxEN", "N", ["END"]) == -1
    assert find_stop("ab", "b", ["", "ab"]) == 0


def _long_reply_run(engine, run_id="r"):
    engine.create_run(tiny_run(run_id))
    engine.loaded[run_id].eos_ids = []  # so every reply runs to max_tokens
    return engine.loaded[run_id]


def _count_decoding(run):
    """Wrap the run's tokenizer: count the token ids decoded, and signal the first decode."""
    counted = {"ids": 0, "calls": 0}
    started = threading.Event()
    decode = run.tokenizer.decode

    def counting(ids, *args, **kwargs):
        counted["ids"] += len(ids)
        counted["calls"] += 1
        started.set()
        return decode(ids, *args, **kwargs)

    run.tokenizer.decode = counting
    return counted, started


def test_stop_strings_cost_linear_decoding(engine):
    run = _long_reply_run(engine)
    counted, _ = _count_decoding(run)
    n = 600
    r = engine.chat({"model": "r", "messages": P, "max_tokens": n, "seed": 1, "stop": ["\x00never"]})
    assert r["usage"]["completion_tokens"] == n
    # decoding the whole reply once per token would be n*(n+1)/2 = 180,300 token ids
    assert counted["ids"] < 10 * n, counted


def test_a_step_completes_while_a_long_reply_is_sampled(engine):
    run = _long_reply_run(engine)
    body = {"model": "r", "messages": P, "max_tokens": 1900, "temperature": 0, "stop": ["\x00never"]}
    alone = engine.chat(body)["choices"][0]["message"]["content"]
    counted, started = _count_decoding(run)
    done = {}

    def sample():
        done["reply"] = engine.chat(body)
        done["reply_at"] = time.monotonic()

    sampler = threading.Thread(target=sample)
    sampler.start()
    assert started.wait(60), "sampling never started"
    step = engine.apply_step("r", {"step": 1, "samples": fixed_samples(1)})
    step_at = time.monotonic()
    sampler.join(120)
    assert step["step"] == 1 and not step["replayed"]
    assert step_at < done["reply_at"], "the step waited for the whole reply"
    # the reply began on step 0's weights and stays on them after the step moved the live weights on
    reply = done["reply"]
    assert reply["model"] == "r" and reply["system_fingerprint"] == "r@0"
    assert reply["choices"][0]["message"]["content"] == alone
    assert engine.run_state("r")["step"] == 1


def test_a_step_applied_mid_reply_leaves_its_log_probs_bit_identical(engine):
    """Where a step lands in a reply depends on timing (a loaded machine moves it), so the reply's
    log-probs must not: they are the behaviour log-probs the next step trains on, and a restarted
    run must train on exactly the numbers an undisturbed run did."""
    run = _long_reply_run(engine)
    body = {"model": "r", "messages": P, "max_tokens": 400, "seed": 5, "logprobs": True, "stop": ["\x00never"]}

    def logprobs(reply):
        return [t["logprob"] for t in reply["choices"][0]["logprobs"]["content"]]

    alone = engine.chat(body)
    counted, started = _count_decoding(run)
    done = {}
    sampler = threading.Thread(target=lambda: done.update(reply=engine.chat(body)))
    sampler.start()
    assert started.wait(60), "sampling never started"
    engine.apply_step("r", {"step": 1, "samples": fixed_samples(1)})
    tokens_before_step = counted["calls"]
    sampler.join(120)
    assert 0 < tokens_before_step < 400, "the step landed inside the reply"
    reply = done["reply"]
    assert reply["system_fingerprint"] == "r@0"
    assert reply["choices"][0]["message"]["content"] == alone["choices"][0]["message"]["content"]
    assert logprobs(reply) == logprobs(alone), "log-probs after the step differ from the undisturbed reply's"


def test_a_checkpoint_is_sampled_while_a_step_holds_the_engine(engine):
    """The next step's rollouts sample an older version while this step trains (`maxStaleness`)."""
    engine.create_run(tiny_run("r"))
    engine.apply_step("r", {"step": 1, "samples": fixed_samples(1)})
    body = {"model": "r@0", "messages": P, "max_tokens": 8, "temperature": 0}
    alone = engine.chat(body)["choices"][0]["message"]["content"]
    done = threading.Event()
    replies = {}

    def sample():
        replies["reply"] = engine.chat(body)
        done.set()

    with engine.runs.lock:  # what a step holds from start to commit
        sampler = threading.Thread(target=sample)
        sampler.start()
        finished_while_held = done.wait(60)
    sampler.join(60)
    assert finished_while_held, "sampling the checkpoint waited for the step"
    assert replies["reply"]["choices"][0]["message"]["content"] == alone


def test_only_a_whole_hold_sends_a_request_beside(engine):
    """A step or a load (the lock held whole) sends `run@step` to a checkpoint copy; another
    request's sampling token does not."""
    lock = engine.runs.lock

    def held_in_thread(hold) -> bool:
        entered, release = threading.Event(), threading.Event()

        def run():
            with hold():
                entered.set()
                release.wait(10)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            assert entered.wait(10)
            return lock.held_whole_by_another()
        finally:
            release.set()
            thread.join(10)

    assert held_in_thread(lock.token) is False
    assert held_in_thread(lambda: lock) is True
    assert lock.held_whole_by_another() is False


def test_an_older_step_whose_only_weights_are_a_sharded_snapshot_is_sampled(engine):
    """`run@k` of a full-weight step kept only as a sharded snapshot: its model is made from the shards."""
    from conftest import wait_for_snapshot

    engine.create_run(tiny_run("s", snapshot_every=1, export_keep=0))
    engine.apply_step("s", {"step": 1, "samples": fixed_samples(1)})
    wait_for_snapshot(engine.state_dir, "s", 1)
    body = {"model": "s@1", "messages": P, "max_tokens": 8, "temperature": 0}
    live = engine.chat(body)["choices"][0]["message"]["content"]  # the current step: the live weights
    engine.apply_step("s", {"step": 2, "samples": fixed_samples(2)})
    reply = engine.chat(body)
    assert reply["system_fingerprint"] == "s@1"
    assert reply["choices"][0]["message"]["content"] == live
