"""Two ranks (torchrun, gloo on CPU) give the same updates as one process: the multi-GPU code path
(rank-0 HTTP + broadcast operations, per-rank data shards, token-mean across ranks, token
broadcast while sampling) checked without GPUs. Under an FSDP launch, each rank writes its own shard
of a full-weight snapshot (no gather on rank 0) and a killed run recovers from them."""

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import torch
from conftest import fixed_samples, optimizer_tensors, policy_tensors, tiny_run, wait_for_snapshot

TORCHRUN = Path(sys.executable).parent / "torchrun"


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def test_two_ranks_match_one_process(tmp_path, engine):
    # PyTorch installs torchrun beside the interpreter; without it the set-up is broken, not the test skippable.
    assert TORCHRUN.exists(), f"torchrun not found at {TORCHRUN}: reinstall torch (trainer/install.sh)"
    d = tmp_path / "dist"
    log = open(tmp_path / "dist.log", "w")
    proc = subprocess.Popen(
        [
            str(TORCHRUN),
            "--nproc_per_node",
            "2",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(_free_port()),
            "-m",
            "attune_trainer",
            "serve",
            "--port",
            "0",
            "--device",
            "cpu",
            "--state-dir",
            str(d),
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        url = None
        deadline = time.time() + 120
        while time.time() < deadline and url is None:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
            m = re.search(r"listening on (http://\S+)", line or "")
            url = m.group(1) if m else None
        assert url, (tmp_path / "dist.log").read_text()[-3000:]
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
        for rid, run in (
            # snapshots every step: the weights compared below are read from step 2's checkpoint
            ("dp", tiny_run("dp", algorithm="ppo", kl_coef=0.05, learning_rate=1e-3, snapshot_every=1)),
            ("dg", tiny_run("dg", algorithm="grpo", lora={"r": 4}, kl_coef=0.05, learning_rate=1e-3)),
        ):
            assert httpx.post(f"{url}/v1/runs", json=run, timeout=120).status_code == 201
            engine.create_run(run)
            for s in (1, 2):
                body = {"step": s, "samples": fixed_samples(s, 2, 3)}
                r = httpx.post(f"{url}/v1/runs/{rid}/steps", json=body, timeout=120)
                assert r.status_code == 200, (rid, s, r.text, (tmp_path / "dist.log").read_text()[-4000:])
                got = r.json()["metrics"]
                want = engine.apply_step(rid, body)["metrics"]
                for k in ("loss", "policy_loss", "value_loss", "kl", "entropy", "grad_norm", "tokens"):
                    assert got[k] == pytest.approx(want[k], rel=1e-4, abs=1e-5), (rid, s, k)
            a, b = policy_tensors(d, rid, 2), policy_tensors(engine.state_dir, rid, 2)
            assert a.keys() == b.keys()
            # Adam turns float-rounding-sized gradients into +-lr steps, so allow a few lr of drift
            worst = max(float((a[k] - b[k]).abs().max()) for k in a)
            assert worst < 4e-3, worst
            chat = {"model": rid, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 6, "seed": 4}
            got = httpx.post(f"{url}/v1/chat/completions", json=chat, timeout=120).json()
            assert got["usage"]["completion_tokens"] >= 1
    finally:
        # torchrun's workers live in their own process groups: kill the whole tree by pid
        import psutil

        try:
            tree = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            tree = []
        for p in tree + [proc]:
            try:
                p.kill()
            except (psutil.NoSuchProcess, ProcessLookupError):
                pass
        proc.wait(timeout=30)
        psutil.wait_procs([p for p in tree if isinstance(p, psutil.Process)], timeout=30)
        log.close()


@contextlib.contextmanager
def _two_ranks(state_dir: Path, log_path: Path, env_extra: dict):
    """`attune_trainer serve` on two torchrun ranks; yields its URL, kills every process on exit (SIGKILL)."""
    import psutil

    log = open(log_path, "a")
    command = [str(TORCHRUN), "--nproc_per_node", "2", "--master_addr", "127.0.0.1"]
    command += ["--master_port", str(_free_port()), "-m", "attune_trainer", "serve", "--port", "0"]
    command += ["--device", "cpu", "--state-dir", str(state_dir), "--threads", "1"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env={**os.environ, **env_extra})
    try:
        url = None
        deadline = time.time() + 120
        while time.time() < deadline and url is None:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
            m = re.search(r"listening on (http://\S+)", line or "")
            url = m.group(1) if m else None
        assert url, log_path.read_text()[-3000:]
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
        yield url
    finally:
        try:
            tree = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            tree = []
        for p in tree + [proc]:
            with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
                p.kill()
        proc.wait(timeout=30)
        psutil.wait_procs([p for p in tree if isinstance(p, psutil.Process)], timeout=30)
        log.close()


# what an FSDP2 accelerate launch sets; info logs: how the run was wrapped, what recovery replayed
FSDP = {"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": "2", "ATTUNE_TRAINER_LOG_LEVEL": "info"}
# full weights; GRPO: accelerate's FSDP2 prepares one model only (PPO's critic: the DDP test above)
SHARDED = tiny_run("sh", algorithm="grpo", learning_rate=1e-3, snapshot_every=2)


def _steps(url: str, steps) -> list[dict]:
    out = []
    for s in steps:
        r = httpx.post(f"{url}/v1/runs/sh/steps", json={"step": s, "samples": fixed_samples(s, 2, 3)}, timeout=120)
        assert r.status_code == 200, r.text
        out.append(r.json())
    return out


def _snapshot_state(state_dir: Path, step: int) -> dict:
    return {**policy_tensors(state_dir, "sh", step), **optimizer_tensors(state_dir, "sh", step)}


def test_two_fsdp_ranks_write_their_own_snapshot_shards_and_recover_from_them(tmp_path):
    ref = tmp_path / "ref"
    with _two_ranks(ref, tmp_path / "ref.log", FSDP) as url:
        assert httpx.post(f"{url}/v1/runs", json=SHARDED, timeout=120).status_code == 201
        want = _steps(url, [1, 2, 3, 4])
        wait_for_snapshot(ref, "sh", 4)
    assert '"distributed": "DistributedType.FSDP"' in (tmp_path / "ref.log").read_text()  # sharded by FSDP2

    d = tmp_path / "crashy"
    with _two_ranks(d, tmp_path / "crashy.log", FSDP) as url:
        assert httpx.post(f"{url}/v1/runs", json=SHARDED, timeout=120).status_code == 201
        _steps(url, [1, 2, 3])
        snapshot = wait_for_snapshot(d, "sh", 2)
    # killed three steps in, one past snapshot 2: each rank wrote its own shard, about half the state;
    # rank 0 gathered nothing (its shard would hold it all)
    shards = {p.name: p.stat().st_size for p in snapshot.glob("*.distcp")}
    assert sorted(shards) == ["__0_0.distcp", "__1_0.distcp"], shards
    total = sum(shards.values())
    assert all(0.3 * total < size < 0.7 * total for size in shards.values()), shards

    with _two_ranks(d, tmp_path / "recovered.log", FSDP) as url:
        assert httpx.get(f"{url}/v1/runs/sh", timeout=120).json()["step"] == 3
        got = _steps(url, [4])
        wait_for_snapshot(d, "sh", 4)
    assert "logged steps replayed" in (tmp_path / "recovered.log").read_text()
    assert got[0]["metrics"] == {**want[3]["metrics"], "seconds": got[0]["metrics"]["seconds"]}
    a, b = _snapshot_state(ref, 4), _snapshot_state(d, 4)
    assert a.keys() == b.keys() and a
    for k in a:
        assert torch.equal(a[k], b[k]), f"tensor {k} differs after recovery"
