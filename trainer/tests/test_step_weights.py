"""Steps without a snapshot (issue 43): full weights snapshot every 10 steps by default, LoRA every step.

A step between snapshots is served from the live weights while it is the current one; its weights are
on disk only as an export, written when the run keeps exports (what a vLLM publish reads) or when a
reply in flight on the live weights needs them past the next step. Any other read of such a step is a
404 naming the step and the nearest steps that have weights. A run whose retention cannot fit on the
trainer's disk is refused at its start."""

import json

import pytest
from conftest import fixed_samples, tiny_run, wait_for_snapshot
from fastapi.testclient import TestClient


@pytest.fixture
def client(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token="")) as c:
        yield c


def _chat(client, model):
    return client.post(
        "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "seed": 1},
    )


def _steps(client, run_id, steps):
    out = []
    for s in steps:
        r = client.post(f"/v1/runs/{run_id}/steps", json={"step": s, "samples": fixed_samples(s)})
        assert r.status_code == 200, r.text
        out.append(r.json())
    return out


def test_full_weights_default_snapshots_every_10_and_serves_the_current_step_live(client, engine):
    assert client.post("/v1/runs", json=tiny_run("full")).status_code == 201
    answers = _steps(client, "full", [1, 2, 3])
    assert all(a["checkpoint"] is None and a["storage"]["snapshot"] is False for a in answers)
    assert all(a["storage"]["bytes_written"] < 100_000 for a in answers)  # the log entry only
    assert engine.run_store("full").committed_steps() == [0]
    assert _chat(client, "full@3").status_code == 200  # the current step: live weights
    old = _chat(client, "full@2")
    assert old.status_code == 404
    message = old.json()["error"]["message"]
    assert "has no checkpoint of step 2" in message and "nearest steps with weights: 0" in message, message
    assert "current step 3" in message
    assert old.json()["error"]["field"] == "model"
    weights = client.get("/v1/runs/full/checkpoints/2/weights")
    assert weights.status_code == 404 and "nearest steps with weights: 0" in weights.json()["error"]["message"]
    models = {m["id"] for m in client.get("/v1/models").json()["data"]}
    assert {"full@0", "full@3"} <= models and "full@2" not in models
    assert client.get("/v1/runs/full/steps/2").json()["checkpoint"] is None


def test_lora_default_snapshots_every_step(client, engine):
    assert client.post("/v1/runs", json=tiny_run("lo", lora={"r": 4, "alpha": 8})).status_code == 201
    answers = _steps(client, "lo", [1, 2])
    assert all(a["storage"]["snapshot"] for a in answers)
    assert engine.run_store("lo").committed_steps() == [0, 1, 2]
    assert _chat(client, "lo@1").status_code == 200


def test_exports_are_written_per_step_only_when_kept_and_only_the_newest_are_kept(client, engine):
    run = tiny_run("pub", export_keep=2, snapshot_every=5)
    assert client.post("/v1/runs", json=run).status_code == 201
    answers = _steps(client, "pub", [1, 2, 3, 4, 5])
    store = engine.run_store("pub")
    exports = store.dir / "exports"
    assert sorted(p.name for p in exports.iterdir()) == ["step-000004", "step-000005"]
    assert answers[2]["checkpoint"]["path"] is None and answers[2]["storage"]["export_bytes"] > 0
    # a full-weight snapshot is sharded, for recovery only: its step's weights are served from its export
    assert answers[4]["storage"]["export_bytes"] > 0 and answers[4]["storage"]["snapshot"]
    assert answers[4]["checkpoint"]["export_path"] == str((exports / "step-000005").resolve())
    assert answers[4]["checkpoint"]["path"] == str(store.ckpt(5).resolve())
    assert not (store.ckpt(5) / "policy").exists()
    assert client.get("/v1/runs/pub/checkpoints/5/weights").json()["files"]
    marker = json.loads((exports / "step-000004" / "export.json").read_text())
    assert marker == {"step": 4, "format": "hf_full", "dtype": "float32"}
    manifest = client.get("/v1/runs/pub/checkpoints/4/weights")
    assert manifest.status_code == 200, manifest.text
    assert _chat(client, "pub@4").status_code == 200
    gone = client.get("/v1/runs/pub/steps/3").json()
    assert gone["checkpoint"]["export_path"] is None  # its export was not kept


def test_a_reply_in_flight_on_the_live_weights_gets_them_exported_before_a_step_changes_them(engine):
    engine.create_run(tiny_run("live"))
    engine.apply_step("live", {"step": 1, "samples": fixed_samples(1)})
    with engine.runs.live_reply("live", 1):
        engine.apply_step("live", {"step": 2, "samples": fixed_samples(2)})
    store = engine.run_store("live")
    assert (store.dir / "exports" / "step-000001" / "export.json").exists()
    engine.apply_step("live", {"step": 3, "samples": fixed_samples(3)})  # no reply in flight: no export
    assert not (store.dir / "exports" / "step-000002").exists()


def test_a_run_whose_retention_cannot_fit_on_the_disk_is_refused_naming_the_setting(client, engine, monkeypatch):
    import shutil
    from collections import namedtuple

    from attune_trainer.state import disk_budget

    usage = namedtuple("usage", "total used free")
    # tiny-random: a snapshot (fp32 weights + AdamW) is a few MB; 400 exports do not fit in 40 MB
    monkeypatch.setattr(disk_budget.shutil, "disk_usage", lambda _p: usage(10**9, 0, 40 * 10**6))
    r = client.post("/v1/runs", json=tiny_run("big", export_keep=400))
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["field"] == "hyperparameters.export_keep"
    assert "what fits: export_keep" in error["message"] and "GB free" in error["message"]
    assert not engine.run_store("big").exists()
    # full weights keep no weight-only snapshots (sharded ones serve recovery only): keep_checkpoints costs nothing
    assert client.post("/v1/runs", json=tiny_run("big", keep_checkpoints=400)).status_code == 201
    monkeypatch.setattr(disk_budget.shutil, "disk_usage", shutil.disk_usage)


def test_full_weight_exports_link_the_runs_tokenizer_and_snapshots_hold_only_shards(engine):
    """An export stays a complete model directory, but the tokenizer (a few MB, as large as the tiny
    model's snapshot) is written once, at the run's creation, and counted in no step's bytes. A
    full-weight snapshot holds only its shards: HF-format weights of its step come from an export."""
    engine.create_run(tiny_run("tok", snapshot_every=1, export_keep=1))
    out = engine.apply_step("tok", {"step": 1, "samples": fixed_samples(1)})
    store = engine.run_store("tok")
    tokenizer = store.dir / "tokenizer" / "tokenizer.json"
    model_dir = store.dir / "exports" / "step-000001"
    assert (model_dir / "tokenizer.json").stat().st_ino == tokenizer.stat().st_ino
    assert (model_dir / "tokenizer_config.json").exists()
    snapshot = wait_for_snapshot(engine.state_dir, "tok", 1)
    assert sorted(p.name for p in snapshot.iterdir()) == [".metadata", "__0_0.distcp", "state.json"]
    # the step's snapshot_bytes are its tensors' bytes; the shard adds DCP's per-tensor headers
    shard = (snapshot / "__0_0.distcp").stat().st_size
    assert out["storage"]["snapshot_bytes"] <= shard < 1.25 * out["storage"]["snapshot_bytes"]
    later = engine.apply_step("tok", {"step": 2, "samples": fixed_samples(2)})
    previous = later["storage"]["previous_snapshot"]  # the background write, reported by the next step
    assert previous["step"] == 1 and previous["committed"] and previous["bytes"] > shard
    assert previous["write_seconds"] > 0
