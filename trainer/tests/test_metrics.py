"""GET /metrics: Prometheus text whose step, time, token and memory series move with a step;
token-protected like /v1/status."""

import re

import pytest
from conftest import fixed_samples, tiny_run
from fastapi.testclient import TestClient

TOKEN = "metrics-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")


@pytest.fixture
def guarded(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token=TOKEN)) as c:
        yield c


def scrape(client) -> dict[str, float]:
    r = client.get("/metrics", headers=AUTH)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for line in r.text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return samples


def test_metrics_need_the_token(guarded):
    assert guarded.get("/metrics").status_code == 401
    assert guarded.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_metrics_move_after_a_step(guarded):
    before = scrape(guarded)
    assert before['attune_trainer_steps_total{outcome="applied"}'] == 0
    assert before["attune_trainer_resident_memory_bytes"] > 0

    assert guarded.post("/v1/runs", json=tiny_run("m"), headers=AUTH).status_code == 201
    r = guarded.post("/v1/runs/m/steps", json={"step": 1, "samples": fixed_samples(1)}, headers=AUTH)
    assert r.status_code == 200
    step = r.json()["metrics"]
    after = scrape(guarded)

    assert after['attune_trainer_steps_total{outcome="applied"}'] == 1
    assert after['attune_trainer_steps_total{outcome="failed"}'] == 0
    assert after["attune_trainer_step_seconds_count"] == 1
    assert after['attune_trainer_step_seconds_bucket{le="+Inf"}'] == 1
    assert after["attune_trainer_step_seconds_sum"] == pytest.approx(step["seconds"])
    assert after["attune_trainer_completion_tokens_total"] == step["tokens"] > 0
    assert after["attune_trainer_prompt_tokens_total"] == step["prompt_tokens"] > 0
    assert after["attune_trainer_tokens_per_second"] == pytest.approx(step["tokens"] / step["seconds"])

    # a replayed step is not applied again, and counts nothing
    guarded.post("/v1/runs/m/steps", json={"step": 1, "samples": fixed_samples(1)}, headers=AUTH)
    assert scrape(guarded)['attune_trainer_steps_total{outcome="applied"}'] == 1


def test_buckets_are_cumulative():
    from attune_trainer.engine.prometheus import STEP_SECONDS_BUCKETS, TrainerMetrics

    metrics = TrainerMetrics()
    metrics.step_applied({"seconds": 0.3, "tokens": 30})
    metrics.step_applied({"seconds": 7.0, "tokens": 70})
    text = metrics.render()
    assert 'attune_trainer_step_seconds_bucket{le="0.25"} 0' in text
    assert 'attune_trainer_step_seconds_bucket{le="0.5"} 1' in text
    assert 'attune_trainer_step_seconds_bucket{le="10.0"} 2' in text
    assert f'attune_trainer_step_seconds_bucket{{le="{STEP_SECONDS_BUCKETS[-1]}"}} 2' in text
    assert "attune_trainer_tokens_per_second 10.0" in text


def test_a_failed_step_counts_as_failed(tmp_path, monkeypatch):
    from attune_trainer.engine.engine import Engine
    from attune_trainer.service.server import create_app

    monkeypatch.setenv("ATTUNE_TRAINER_FAULT_INJECTION", "after_update@1:1")
    engine = Engine(tmp_path / "state", device="cpu")
    with TestClient(create_app(engine, token=TOKEN), raise_server_exceptions=False) as client:
        client.post("/v1/runs", json=tiny_run("f"), headers=AUTH)
        assert (
            client.post("/v1/runs/f/steps", json={"step": 1, "samples": fixed_samples(1)}, headers=AUTH).status_code
            == 500
        )
        failed = scrape(client)
        assert failed['attune_trainer_steps_total{outcome="failed"}'] == 1
        assert failed['attune_trainer_steps_total{outcome="applied"}'] == 0
        assert (
            client.post("/v1/runs/f/steps", json={"step": 1, "samples": fixed_samples(1)}, headers=AUTH).status_code
            == 200
        )
        assert scrape(client)['attune_trainer_steps_total{outcome="applied"}'] == 1
