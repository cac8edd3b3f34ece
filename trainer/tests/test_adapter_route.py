"""GET /v1/runs/{run}/checkpoints/{step}/adapter: a checkpoint's LoRA adapter for another host (a vLLM
replica's publisher, `attune export --trainer-url`): the manifest's sizes and sha256 are the files',
its digest is recomputable from them, the files are the local export's, and the route needs the token."""

import hashlib

import pytest
from conftest import fixed_samples, tiny_run
from fastapi.testclient import TestClient

from attune_trainer.state.adapter_files import ADAPTER_FILES, adapter_digest
from attune_trainer.state.export import export_checkpoint

TOKEN = "adapter-route-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(engine):
    from attune_trainer.service.server import create_app

    engine.create_run(tiny_run("lo", lora={"r": 4}))
    engine.apply_step("lo", {"step": 1, "samples": fixed_samples(1)})
    with TestClient(create_app(engine, token=TOKEN)) as c:
        yield c


def test_manifest_and_files_match_and_the_digest_is_recomputable(api, engine, tmp_path):
    r = api.get("/v1/runs/lo/checkpoints/1/adapter", headers=AUTH)
    assert r.status_code == 200, r.text
    manifest = r.json()
    assert manifest["run_id"] == "lo" and manifest["step"] == 1 and manifest["format"] == "peft_lora"
    assert [f["name"] for f in manifest["files"]] == sorted(ADAPTER_FILES)
    lines = ""
    for f in manifest["files"]:
        body = api.get(f"/v1/runs/lo/checkpoints/1/adapter/{f['name']}", headers=AUTH)
        assert body.status_code == 200 and body.headers["content-type"] == "application/octet-stream"
        assert len(body.content) == f["size"] and hashlib.sha256(body.content).hexdigest() == f["sha256"]
        lines += f"{f['sha256']}  {f['name']}\n"
    # the rule of the digest, written out: what `sha256sum` prints over the sorted files, hashed
    assert manifest["digest"] == hashlib.sha256(lines.encode()).hexdigest() == adapter_digest(manifest["files"])

    # the local export writes the same adapter files, byte for byte
    export_checkpoint(engine.state_dir, "lo", 1, tmp_path / "out")
    for f in manifest["files"]:
        assert hashlib.sha256((tmp_path / "out" / f["name"]).read_bytes()).hexdigest() == f["sha256"]


def test_each_step_has_its_own_adapter(api, engine):
    engine.apply_step("lo", {"step": 2, "samples": fixed_samples(2)})
    digests = [api.get(f"/v1/runs/lo/checkpoints/{s}/adapter", headers=AUTH).json()["digest"] for s in (0, 1, 2)]
    assert len(set(digests)) == 3


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/v1/runs/nope/checkpoints/1/adapter", "run 'nope' not found"),
        ("/v1/runs/lo/checkpoints/7/adapter", "run 'lo' has no checkpoint of step 7: no weights of it on disk"),
        ("/v1/runs/lo/checkpoints/1/adapter/optimizer.pt", "the adapter has no file 'optimizer.pt'"),
        ("/v1/runs/lo/checkpoints/1/adapter/README.md", "the adapter has no file 'README.md'"),
        ("/v1/runs/lo/checkpoints/5/adapter/adapter_config.json", "has no checkpoint of step 5"),
    ],
)
def test_missing_run_step_or_file_is_a_404_that_says_which(api, path, says):
    r = api.get(path, headers=AUTH)
    assert r.status_code == 404, r.text
    assert says in r.json()["error"]["message"]


def test_a_full_fine_tuning_run_has_no_adapter(api, engine):
    engine.create_run(tiny_run("full"))
    r = api.get("/v1/runs/full/checkpoints/0/adapter", headers=AUTH)
    assert r.status_code == 404
    assert "has no LoRA adapter: the run is full fine-tuning" in r.json()["error"]["message"]


@pytest.mark.parametrize("suffix", ["", "/adapter_model.safetensors"])
def test_the_route_refuses_without_the_token(api, suffix):
    path = f"/v1/runs/lo/checkpoints/1/adapter{suffix}"
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = api.get(path, headers=headers)
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    assert api.get(path, headers=AUTH).status_code == 200
