"""Base models come from the built-ins or from inside an allow-listed --models-dir; a GGUF's
conversion is cached under its content hash."""

import shutil
from pathlib import Path

import pytest
from conftest import tiny_run
from fastapi.testclient import TestClient


def _client(state_dir: Path, models_dir: Path | None):
    from attune_trainer.engine.engine import Engine
    from attune_trainer.service.server import create_app

    allowed = {"models_dir": models_dir} if models_dir else {}
    return TestClient(create_app(Engine(state_dir, device="cpu", **allowed), token=""))


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory) -> Path:
    from attune_trainer.models import build_tiny_random

    d = tmp_path_factory.mktemp("outside") / "m"
    build_tiny_random(d, seed=1)
    return d


def _run(run_id, base_model):
    return {**tiny_run(run_id), "base_model": base_model}


def test_without_a_models_dir_only_built_in_models_are_accepted(tmp_path, hf_model):
    with _client(tmp_path / "state", None) as c:
        for base in (str(hf_model), str(hf_model.parent), "m", "../m", "/etc"):
            r = c.post("/v1/runs", json=_run("a", base))
            assert r.status_code == 422 and r.json()["error"]["field"] == "base_model", (base, r.text)
            assert "--models-dir" in r.json()["error"]["message"]
        assert c.post("/v1/runs", json=_run("a", "tiny-random")).status_code == 201
        assert c.get("/v1/runs").json()["runs"][0]["run_id"] == "a"


def test_local_models_only_from_inside_the_models_dir(tmp_path, hf_model):
    models = tmp_path / "models"
    models.mkdir()
    (models / "m").symlink_to(hf_model, target_is_directory=True)  # a link out of the directory
    inside = models / "team" / "m2"
    shutil.copytree(hf_model, inside)
    shutil.copytree(hf_model, tmp_path / "escape")  # a model next to the models directory
    with _client(tmp_path / "state", models) as c:
        assert c.post("/v1/runs", json=_run("rel", "team/m2")).status_code == 201
        assert c.post("/v1/runs", json=_run("abs", str(inside))).status_code == 201
        for base in ("m", "../escape", str(tmp_path / "escape"), "team/../../escape", "/tmp", "nope", "a\x00b"):
            r = c.post("/v1/runs", json=_run("bad", base))
            assert r.status_code == 422 and r.json()["error"]["field"] == "base_model", (base, r.text)
        chat = {"model": "rel", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        assert c.post("/v1/chat/completions", json=chat).status_code == 200


def test_gguf_conversions_are_keyed_by_content_not_by_name(tmp_path, monkeypatch):
    """Two different files both named m.gguf must not share one conversion (the second run would
    train the first one's weights); the same bytes under two names may."""
    from attune_trainer import models

    converted = []

    def fake_convert(gguf: Path, out_dir: Path) -> None:
        converted.append(gguf)
        out_dir.mkdir(parents=True)
        (out_dir / "config.json").write_bytes(gguf.read_bytes())

    monkeypatch.setattr(models, "_convert_gguf", fake_convert)
    root = tmp_path / "models"
    for sub, content in (("a", b"weights A"), ("b", b"weights B"), ("c", b"weights A")):
        (root / sub).mkdir(parents=True)
        (root / sub / "m.gguf").write_bytes(content)
    state = tmp_path / "state"
    a = models.resolve_base("a/m.gguf", state, models_dir=root)
    b = models.resolve_base(str(root / "b" / "m.gguf"), state, models_dir=root)
    c = models.resolve_base("c/m.gguf", state, models_dir=root)
    assert (
        a != b and (a / "config.json").read_bytes() == b"weights A" and (b / "config.json").read_bytes() == b"weights B"
    )
    assert c == a and len(converted) == 2
    # a file replaced in place is converted again
    (root / "a" / "m.gguf").write_bytes(b"weights A, retrained")
    again = models.resolve_base("a/m.gguf", state, models_dir=root)
    assert again not in (a, b) and (again / "config.json").read_bytes() == b"weights A, retrained"


def test_serve_checks_the_models_dir(tmp_path):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "attune_trainer", "serve", "--port", "0", "--state-dir", str(tmp_path / "s")]
    out = subprocess.run(cmd + ["--models-dir", str(tmp_path / "none")], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 and "--models-dir" in out.stderr and "no such directory" in out.stderr
