"""One trainer per state directory: a second one refuses to start, naming the directory and the holder."""

import subprocess
import sys

import httpx
import pytest
from conftest import tiny_run


def _serve(state_dir):
    """A second `serve` on the directory: it must exit on its own (a running one is killed at the timeout)."""
    cmd = [sys.executable, "-m", "attune_trainer", "serve", "--port", "0", "--state-dir", str(state_dir)]
    try:
        return subprocess.run(cmd + ["--threads", "1"], capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a second trainer started on {state_dir}, which another trainer holds")


def test_a_second_trainer_on_the_same_state_dir_refuses_to_start(tmp_path, service_factory):
    state_dir = (tmp_path / "state").resolve()
    first = service_factory(state_dir)
    assert httpx.post(f"{first.url}/v1/runs", json=tiny_run("held"), timeout=120).status_code == 201

    second = _serve(state_dir)
    assert second.returncode != 0
    assert str(state_dir) in second.stderr and f"pid {first.proc.pid}" in second.stderr, second.stderr[-2000:]
    # the first one keeps its directory and its run
    assert httpx.get(f"{first.url}/v1/runs/held", timeout=30).json()["step"] == 0
    assert (state_dir / "trainer.lock").read_text().strip() == str(first.proc.pid)

    # the kernel releases the lock when its holder dies, however it dies
    first.kill()
    third = service_factory(state_dir)
    assert httpx.get(f"{third.url}/v1/runs/held", timeout=30).json()["step"] == 0
    assert (state_dir / "trainer.lock").read_text().strip() == str(third.proc.pid)


def test_two_engines_in_one_process_cannot_share_a_state_dir(tmp_path):
    import os

    from attune_trainer.engine.engine import Engine
    from attune_trainer.state.state_lock import StateDirInUse

    first = Engine(tmp_path / "state", device="cpu")
    with pytest.raises(StateDirInUse) as refused:
        Engine(tmp_path / "state", device="cpu")
    assert str(tmp_path / "state") in str(refused.value) and f"pid {os.getpid()}" in str(refused.value)
    assert first.list_runs() == []
