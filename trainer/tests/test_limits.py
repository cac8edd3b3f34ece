"""What one request may ask: body sizes per route, messages, max_tokens, stop strings, seed; each
refusal a 4xx that names the field."""

import json

import pytest
from conftest import P, fixed_samples, tiny_run
from fastapi.testclient import TestClient

from attune_trainer.contract import limits


@pytest.fixture
def client(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token=""), raise_server_exceptions=False) as c:
        c.post("/v1/runs", json=tiny_run("r", max_length=64))
        yield c


def _refused(r, status: int, field: str):
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.json()["error"]["field"] == field, r.text[:500]
    return r.json()["error"]["message"]


def _chat(**overrides):
    return {"model": "r", "messages": P, "max_tokens": 4, **overrides}


def test_body_size_per_route(client):
    big_chat = json.dumps(_chat(messages=[{"role": "user", "content": "x" * limits.CHAT_BODY_BYTES}]))
    msg = _refused(
        client.post("/v1/chat/completions", content=big_chat, headers={"content-type": "application/json"}), 413, "body"
    )
    assert "1 MiB" in msg and "/v1/chat/completions" in msg
    big_run = json.dumps({**tiny_run("b"), "pad": "x" * limits.OTHER_BODY_BYTES})
    _refused(client.post("/v1/runs", content=big_run, headers={"content-type": "application/json"}), 413, "body")
    # steps may be far larger than chat requests (this one is parsed, then refused for its last reward) ...
    samples = [dict(s, completion="ok " * 5000) for s in fixed_samples(1) * 20]
    samples[-1]["reward"] = "high"
    step = json.dumps({"step": 1, "samples": samples})
    assert limits.CHAT_BODY_BYTES < len(step) < limits.STEP_BODY_BYTES
    r = client.post("/v1/runs/r/steps", content=step, headers={"content-type": "application/json"})
    _refused(r, 422, f"samples.{len(samples) - 1}.reward")
    # ... but not unbounded
    huge = b'{"step": 2, "samples": [' + b" " * limits.STEP_BODY_BYTES + b"]}"
    _refused(client.post("/v1/runs/r/steps", content=huge, headers={"content-type": "application/json"}), 413, "body")


def test_a_body_without_content_length_is_cut_off_at_the_limit(client):
    def chunks():
        yield b'{"model": "r", "messages": [{"role": "user", "content": "'
        for _ in range(limits.CHAT_BODY_BYTES // 65536 + 1):
            yield b"x" * 65536
        yield b'"}]}'

    r = client.post("/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"})
    _refused(r, 413, "body")


def test_messages(client):
    _refused(client.post("/v1/chat/completions", json=_chat(messages=P * (limits.MESSAGES + 1))), 422, "messages")
    long = [{"role": "user", "content": "x" * (limits.MESSAGE_CHARS + 1)}]
    assert "characters" in _refused(
        client.post("/v1/chat/completions", json=_chat(messages=long)), 422, "messages.0.content"
    )
    parts = [{"role": "user", "content": [{"type": "text", "text": "x"}] * (limits.MESSAGE_PARTS + 1)}]
    _refused(client.post("/v1/chat/completions", json=_chat(messages=parts)), 422, "messages.0.content")
    role = [{"role": "u" * (limits.ROLE_CHARS + 1), "content": "hi"}]
    _refused(client.post("/v1/chat/completions", json=_chat(messages=role)), 422, "messages.0.role")
    bad = [dict(s, prompt=P * (limits.MESSAGES + 1)) for s in fixed_samples(1)]
    _refused(client.post("/v1/runs/r/steps", json={"step": 1, "samples": bad}), 422, "samples.0.prompt")


def test_max_tokens_is_bounded_by_the_runs_max_length(client):
    msg = _refused(client.post("/v1/chat/completions", json=_chat(max_tokens=65)), 422, "max_tokens")
    assert "max_length" in msg and "64" in msg
    _refused(
        client.post("/v1/chat/completions", json=_chat(max_tokens=None, max_completion_tokens=10**9)),
        422,
        "max_completion_tokens",
    )
    r = client.post("/v1/chat/completions", json=_chat(max_tokens=64, temperature=0))
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] <= 64
    r = client.post("/v1/chat/completions", json=_chat(max_tokens=None))  # the default fits the run
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] <= 64


def test_stop_strings_model_seed_and_n(client):
    _refused(client.post("/v1/chat/completions", json=_chat(stop=["a"] * (limits.STOP_STRINGS + 1))), 422, "stop")
    _refused(client.post("/v1/chat/completions", json=_chat(stop="s" * (limits.STOP_CHARS + 1))), 422, "stop")
    _refused(client.post("/v1/chat/completions", json=_chat(stop=["s" * (limits.STOP_CHARS + 1)])), 422, "stop")
    assert client.post("/v1/chat/completions", json=_chat(stop=["a"] * limits.STOP_STRINGS)).status_code == 200
    _refused(client.post("/v1/chat/completions", json=_chat(model="r" * (limits.MODEL_CHARS + 1))), 422, "model")
    _refused(client.post("/v1/chat/completions", json=_chat(seed=2**70)), 422, "seed")
    assert client.post("/v1/chat/completions", json=_chat(seed=-(2**63))).status_code == 200
    assert client.post("/v1/chat/completions", json=_chat(seed=2**64 - 1)).status_code == 200
    _refused(client.post("/v1/chat/completions", json=_chat(n=limits.CHOICES + 1)), 422, "n")
