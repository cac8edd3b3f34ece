"""Checkpoints and exports are readable like any other file the trainer writes (a vLLM running as
another user loads the adapter from the checkpoint directory): safetensors alone writes 0600."""

import os
import stat

import pytest
from conftest import fixed_samples, tiny_run

from attune_trainer.state.export import export_checkpoint


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def modes(root) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in root.rglob("*") if p.is_file()}


def test_lora_checkpoint_and_export_files_are_0644(umask_022, engine, tmp_path):
    engine.create_run(tiny_run("modes", lora={"r": 4}))
    result = engine.apply_step("modes", {"step": 1, "samples": fixed_samples(1)})
    policy = engine.loaded["modes"].store.ckpt(1) / "policy"
    assert str(policy.resolve()) == result["checkpoint"]["export_path"]
    written = modes(policy)
    assert "adapter_model.safetensors" in written
    assert written == {name: 0o644 for name in written}, written
    run_dir = engine.loaded["modes"].store.dir
    assert set(modes(run_dir).values()) == {0o644}, modes(run_dir)

    export_checkpoint(engine.state_dir, "modes", 1, tmp_path / "out")
    exported = modes(tmp_path / "out")
    assert "adapter_model.safetensors" in exported
    assert exported == {name: 0o644 for name in exported}, exported


def test_the_modes_follow_the_umask(engine, tmp_path):
    old = os.umask(0o027)
    try:
        engine.create_run(tiny_run("masked", lora={"r": 4}))
        engine.apply_step("masked", {"step": 1, "samples": fixed_samples(1)})
    finally:
        os.umask(old)
    policy = engine.loaded["masked"].store.ckpt(1) / "policy"
    assert set(modes(policy).values()) == {0o640}, modes(policy)
