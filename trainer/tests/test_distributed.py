"""Two ranks (torchrun, gloo on CPU) give the same updates as one process: the multi-GPU code path
(rank-0 HTTP + broadcast operations, per-rank data shards, token-mean across ranks, token
broadcast while sampling) checked without GPUs."""

import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from conftest import fixed_samples, policy_tensors, tiny_run

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
                got = httpx.post(f"{url}/v1/runs/{rid}/steps", json=body, timeout=120).json()["metrics"]
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
