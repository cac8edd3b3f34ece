"""GET /v1/runs/{run}/checkpoints/{step}/weights: a full fine-tuning checkpoint's model directory for another
host (the publisher beside a vLLM replica downloads it, then asks vLLM to reload it in place): the manifest's
sizes and sha256 are the files', its digest is recomputable from them, the files load as the step's model,
only the manifest's names are served, and the route needs the token."""

import hashlib

import pytest
import torch
from conftest import fixed_samples, tiny_run
from fastapi.testclient import TestClient

from attune_trainer.state.adapter_files import adapter_digest

TOKEN = "weights-route-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(engine):
    from attune_trainer.service.server import create_app

    engine.create_run(tiny_run("full", export_keep=2))  # what a vLLM publish asks for
    engine.apply_step("full", {"step": 1, "samples": fixed_samples(1)})
    with TestClient(create_app(engine, token=TOKEN)) as c:
        yield c


def test_the_manifest_names_the_model_files_and_they_load_as_the_step_model(api, engine, tmp_path):
    r = api.get("/v1/runs/full/checkpoints/1/weights", headers=AUTH)
    assert r.status_code == 200, r.text
    manifest = r.json()
    assert manifest["run_id"] == "full" and manifest["step"] == 1 and manifest["format"] == "hf_full"
    names = [f["name"] for f in manifest["files"]]
    assert names == sorted(names) and "config.json" in names and any(n.endswith(".safetensors") for n in names)
    for f in manifest["files"]:
        body = api.get(f"/v1/runs/full/checkpoints/1/weights/{f['name']}", headers=AUTH)
        assert body.status_code == 200 and body.headers["content-type"] == "application/octet-stream"
        assert len(body.content) == f["size"] and hashlib.sha256(body.content).hexdigest() == f["sha256"]
        (tmp_path / f["name"]).write_bytes(body.content)
    assert manifest["digest"] == adapter_digest(manifest["files"])

    # what was received is the step's model: the same logits as the trainer's live policy
    from transformers import AutoModelForCausalLM

    received = AutoModelForCausalLM.from_pretrained(tmp_path, torch_dtype=torch.float32).eval()
    live = engine.compute.unwrap(engine.ensure_loaded("full").policy).eval()
    ids = torch.tensor([[3, 4, 5, 6]])
    with torch.no_grad():
        assert torch.equal(received(input_ids=ids).logits, live(input_ids=ids).logits)


def test_each_step_has_its_own_weights_and_step_0_is_the_base_model(api, engine):
    engine.apply_step("full", {"step": 2, "samples": fixed_samples(2)})
    digests = [api.get(f"/v1/runs/full/checkpoints/{s}/weights", headers=AUTH).json()["digest"] for s in (0, 1, 2)]
    assert len(set(digests)) == 3


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/v1/runs/nope/checkpoints/1/weights", "run 'nope' not found"),
        ("/v1/runs/full/checkpoints/7/weights", "run 'full' has no checkpoint of step 7"),
        ("/v1/runs/full/checkpoints/1/weights/optimizer.pt", "the weights have no file 'optimizer.pt'"),
    ],
)
def test_a_missing_run_step_or_file_is_a_404_that_says_which(api, path, says):
    r = api.get(path, headers=AUTH)
    assert r.status_code == 404, r.text
    assert says in r.json()["error"]["message"]


@pytest.mark.parametrize("name", ["..", "%2E%2E%2Fstate.json", "%2E%2E%2F%2E%2E%2Frun.json", ".hidden"])
def test_a_path_out_of_the_model_directory_serves_nothing(api, name):
    r = api.get(f"/v1/runs/full/checkpoints/1/weights/{name}", headers=AUTH)
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/json"), r.text


def test_a_lora_run_has_no_full_weights(api, engine):
    engine.create_run(tiny_run("lo", lora={"r": 4}))
    r = api.get("/v1/runs/lo/checkpoints/0/weights", headers=AUTH)
    assert r.status_code == 404
    assert "has no full weights: the run trains a LoRA adapter" in r.json()["error"]["message"]


@pytest.mark.parametrize("suffix", ["", "/config.json"])
def test_the_route_refuses_without_the_token(api, suffix):
    path = f"/v1/runs/full/checkpoints/1/weights{suffix}"
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = api.get(path, headers=headers)
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    assert api.get(path, headers=AUTH).status_code == 200


def _counting_hashes(monkeypatch) -> list[str]:
    """Every file the weights routes hash from now on (each one a full read of its content)."""
    from attune_trainer.state import adapter_files, weights_files

    hashed: list[str] = []

    def counting(path):
        hashed.append(path.name)
        return adapter_files.file_sha256(path)

    monkeypatch.setattr(weights_files, "file_sha256", counting)
    return hashed


def test_an_export_is_hashed_once_when_written_and_its_stored_manifest_is_served(api, engine, monkeypatch):
    """A 7B model is 15 GB read per hash, asked for by every replica's publish and check before a step."""
    from attune_trainer.state.weights_files import STORED_MANIFEST

    hashed = _counting_hashes(monkeypatch)
    first = api.get("/v1/runs/full/checkpoints/1/weights", headers=AUTH).json()
    second = api.get("/v1/runs/full/checkpoints/1/weights", headers=AUTH).json()
    assert hashed == [], "step 1's export was hashed when it was written, not per request"
    assert first == second and first["digest"] == adapter_digest(first["files"])
    export = engine.run_store("full").dir / "exports" / "step-000001"
    assert (export / STORED_MANIFEST).is_file()
    assert STORED_MANIFEST not in [f["name"] for f in first["files"]]
    for f in first["files"]:
        assert hashlib.sha256((export / f["name"]).read_bytes()).hexdigest() == f["sha256"]
    # step 0 (the base model) was written before any export: hashed at its first request, then stored
    api.get("/v1/runs/full/checkpoints/0/weights", headers=AUTH)
    assert hashed and any(n.endswith(".safetensors") for n in hashed)
    hashed.clear()
    api.get("/v1/runs/full/checkpoints/0/weights", headers=AUTH)
    assert hashed == []


def test_a_stored_manifest_that_is_not_the_directorys_files_is_never_served(api, engine, monkeypatch):
    export = engine.run_store("full").dir / "exports" / "step-000001"
    before = api.get("/v1/runs/full/checkpoints/1/weights", headers=AUTH).json()
    hashed = _counting_hashes(monkeypatch)
    (export / "config.json").write_text((export / "config.json").read_text() + "\n")  # another size
    (export / "extra.txt").write_text("a file the stored list does not name")
    after = api.get("/v1/runs/full/checkpoints/1/weights", headers=AUTH).json()
    assert "config.json" in hashed and "extra.txt" in hashed
    sizes = {f["name"]: f["size"] for f in after["files"]}
    assert (
        sizes["config.json"]
        == (export / "config.json").stat().st_size
        != {f["name"]: f["size"] for f in before["files"]}["config.json"]
    )
    assert "extra.txt" in sizes and after["digest"] != before["digest"]
    for f in after["files"]:
        assert hashlib.sha256((export / f["name"]).read_bytes()).hexdigest() == f["sha256"]
    hashed.clear()
    assert api.get("/v1/runs/full/checkpoints/1/weights", headers=AUTH).json() == after
    assert hashed == [], "the recomputed list was stored again"


def test_a_step_whose_only_weights_are_a_sharded_snapshot_is_served_and_exported_byte_for_byte(engine, tmp_path):
    """A sharded snapshot holds no loadable model: the route makes the step's model directory once, as its
    export; `attune export` writes the same files without touching the state directory."""
    from conftest import wait_for_snapshot
    from transformers import AutoModelForCausalLM

    from attune_trainer.service.server import create_app
    from attune_trainer.state.export import export_checkpoint

    engine.create_run(tiny_run("sharded", snapshot_every=1, export_keep=0))
    engine.apply_step("sharded", {"step": 1, "samples": fixed_samples(1)})
    wait_for_snapshot(engine.state_dir, "sharded", 1)
    exports = engine.run_store("sharded").dir / "exports"
    assert not exports.exists() or not any(exports.iterdir()), "no export was written by the step"
    summary = export_checkpoint(engine.state_dir, "sharded", 1, tmp_path / "cli")
    assert summary["format"] == "full"
    assert not exports.exists() or not any(exports.iterdir()), "the local export left the state directory as it was"
    live = {n: p.detach().clone() for n, p in engine.compute.unwrap(engine.loaded["sharded"].policy).named_parameters()}
    exported = AutoModelForCausalLM.from_pretrained(tmp_path / "cli", torch_dtype=torch.float32)
    for name, tensor in exported.named_parameters():
        torch.testing.assert_close(tensor, live[name], rtol=0, atol=0, msg=name)
    with TestClient(create_app(engine, token=TOKEN)) as api:
        manifest = api.get("/v1/runs/sharded/checkpoints/1/weights", headers=AUTH).json()
        files = {f["name"]: f["sha256"] for f in manifest["files"]}
        for f in (tmp_path / "cli").glob("*.safetensors"):
            assert files[f.name] == hashlib.sha256(f.read_bytes()).hexdigest(), f.name


def test_a_full_weight_runs_last_step_between_snapshots_is_written_out_when_asked(engine, tmp_path):
    """A run that ended between snapshots holds its final model in memory only: the weights route writes
    it out (from the live weights) and serves it; `attune export` on the state directory names the way."""
    from transformers import AutoModelForCausalLM

    from attune_trainer.service.server import create_app
    from attune_trainer.state.export import ExportError, export_checkpoint

    engine.create_run(tiny_run("between", snapshot_every=10, export_keep=0))
    for step in (1, 2):
        engine.apply_step("between", {"step": step, "samples": fixed_samples(step)})
    with pytest.raises(ExportError, match=r"step 2 is the run's last step.*--trainer-url"):
        export_checkpoint(engine.state_dir, "between", 2, tmp_path / "local")
    live = {n: p.detach().clone() for n, p in engine.compute.unwrap(engine.loaded["between"].policy).named_parameters()}
    with TestClient(create_app(engine, token=TOKEN)) as api:
        assert api.get("/v1/runs/between/checkpoints/1/weights", headers=AUTH).status_code == 404, "not the last step"
        r = api.get("/v1/runs/between/checkpoints/2/weights", headers=AUTH)
        assert r.status_code == 200, r.text
        out = tmp_path / "fetched"
        out.mkdir()
        for f in r.json()["files"]:
            (out / f["name"]).write_bytes(
                api.get(f"/v1/runs/between/checkpoints/2/weights/{f['name']}", headers=AUTH).content
            )
    served = AutoModelForCausalLM.from_pretrained(out, torch_dtype=torch.float32)
    for name, tensor in served.named_parameters():
        torch.testing.assert_close(tensor, live[name].to(tensor.dtype), rtol=0, atol=0, msg=name)
    summary = export_checkpoint(engine.state_dir, "between", 2, tmp_path / "local")
    assert summary["format"] == "full"
