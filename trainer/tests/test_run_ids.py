"""A run id is a directory name: one rule for every route and the store, nothing read outside the
state directory, and checkpoints loaded as plain tensors (never an arbitrary pickle)."""

import builtins
import pickle
import shutil
from pathlib import Path

import pytest
import torch
from conftest import P, fixed_samples, tiny_run
from fastapi.testclient import TestClient


class Payload:
    """Unpickling this creates `marker`: proof that a pickle's code ran."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.open, (self.marker, "w"))


def _plant_run(tmp_path: Path, where: Path) -> Path:
    """A complete run at `where` (made by another trainer), whose optimizer.pt runs code when unpickled."""
    from attune_trainer.engine.engine import Engine

    other = Engine(tmp_path / "other-state", device="cpu")
    # LoRA: step 1 snapshotted with its optimizer.pt (a full-weight run's snapshots are sharded: test below)
    other.create_run(tiny_run("planted", lora={"r": 4}))
    other.apply_step("planted", {"step": 1, "samples": fixed_samples(1)})
    other.state_lock.release()
    shutil.copytree(other.runs.store("planted").dir, where)
    marker = tmp_path / "pwned"
    torch.save({"policy": Payload(marker)}, where / "checkpoints" / "step-000001" / "optimizer.pt")
    return marker


@pytest.fixture
def client(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token=""), raise_server_exceptions=False) as c:
        yield c


def test_chat_model_cannot_name_a_run_outside_the_state_dir(client, engine, tmp_path):
    planted = tmp_path / "x"
    marker = _plant_run(tmp_path, planted)
    # state dir is tmp_path/"state": runs/../../x is tmp_path/x, the planted run
    for model in ("../../x", "../x", "/tmp/x", str(planted), f"{planted}@1", "../../x@1", "x/../../../x", ".", ".."):
        r = client.post("/v1/chat/completions", json={"model": model, "messages": P, "max_tokens": 2})
        assert 400 <= r.status_code < 500, (model, r.status_code, r.text)
        assert r.json()["error"]["field"] == "model"
        assert not marker.exists(), f"model {model!r} unpickled a file outside the state directory"
    assert list(engine.loaded) == []


def test_every_route_refuses_a_bad_run_id(client):
    for run_id in ("..", ".hidden", "a%2F..%2F..%2Fx", "x" * 129, "-x", "a b"):
        for method, path, body in (
            ("GET", f"/v1/runs/{run_id}", None),
            ("POST", f"/v1/runs/{run_id}/steps", {"step": 1, "samples": fixed_samples(1)}),
            ("GET", f"/v1/runs/{run_id}/steps/1", None),
        ):
            r = client.request(method, path, json=body)
            assert r.status_code in (404, 422), (method, path, r.status_code)


def test_the_store_itself_refuses_a_path_outside_the_runs_dir(tmp_path):
    from attune_trainer.contract.errors import InvalidRunId
    from attune_trainer.state.store import RunStore

    state = tmp_path / "state"
    (state / "runs").mkdir(parents=True)
    for run_id in ("../x", "/tmp/x", "..", "", "a/b", "a\n", "a\x00"):
        with pytest.raises(InvalidRunId):
            RunStore(state, run_id)
    # a symlink planted in runs/ that leads out of it
    (tmp_path / "outside").mkdir()
    (state / "runs" / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(InvalidRunId):
        RunStore(state, "link")
    assert RunStore(state, "ok-1.2_3").dir == (state / "runs" / "ok-1.2_3").resolve()


def test_a_symlinked_run_is_neither_listed_nor_loaded(client, engine, tmp_path):
    marker = _plant_run(tmp_path, tmp_path / "elsewhere")
    (engine.state_dir / "runs" / "sneaky").symlink_to(tmp_path / "elsewhere")
    assert client.get("/v1/runs").json() == {"runs": []}
    assert client.get("/v1/models").json()["data"] == []
    r = client.post("/v1/chat/completions", json={"model": "sneaky", "messages": P, "max_tokens": 2})
    assert r.status_code == 404 and not marker.exists()


def test_checkpoints_load_as_plain_tensors_never_as_pickled_code(client, engine, tmp_path):
    """Even a pickle inside the state directory (a tampered checkpoint) never runs: weights_only loading."""
    from attune_trainer.engine.engine import Engine

    client.post("/v1/runs", json=tiny_run("t", lora={"r": 4}))  # rank 0's snapshot format: optimizer.pt
    assert client.post("/v1/runs/t/steps", json={"step": 1, "samples": fixed_samples(1)}).status_code == 200
    optimizer = engine.state_dir / "runs" / "t" / "checkpoints" / "step-000001" / "optimizer.pt"
    # what the trainer writes loads with weights_only=True
    states = torch.load(optimizer, weights_only=True)
    assert set(states) == {"policy"} and states["policy"]["state"]
    marker = tmp_path / "pwned"
    torch.save({"policy": Payload(marker)}, optimizer)
    engine.state_lock.release()
    restarted = Engine(engine.state_dir, device="cpu")
    with pytest.raises(Exception) as refused:
        restarted.ensure_loaded("t")
    assert "optimizer.pt" in str(refused.value) and not marker.exists()


def test_a_sharded_snapshots_metadata_loads_as_plain_records_never_as_pickled_code(client, engine, tmp_path):
    """A full-weight snapshot's DCP `.metadata` is a pickle: a tampered one is never unpickled as code.
    The snapshot counts as torn, and the run recovers from the snapshot before it by replay."""
    from attune_trainer.engine.engine import Engine

    client.post("/v1/runs", json=tiny_run("d", snapshot_every=1))
    for step in (1, 2):
        assert client.post("/v1/runs/d/steps", json={"step": step, "samples": fixed_samples(step)}).status_code == 200
    engine.close()
    metadata = engine.state_dir / "runs" / "d" / "checkpoints" / "step-000002" / ".metadata"
    marker = tmp_path / "pwned"
    metadata.write_bytes(pickle.dumps(Payload(marker)))
    live = {k: v.clone() for k, v in engine.loaded["d"].policy.state_dict().items()}
    engine.state_lock.release()
    restarted = Engine(engine.state_dir, device="cpu").ensure_loaded("d")
    assert not marker.exists()
    assert restarted.step == 2  # from snapshot 1, step 2 replayed from its log entry
    assert all(torch.equal(v, live[k]) for k, v in restarted.policy.state_dict().items())
