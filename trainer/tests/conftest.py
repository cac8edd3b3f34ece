import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

# Tiny models are fastest single-threaded (and the CI box has 2 shared cores).
torch.set_num_threads(1)
os.environ.setdefault("ATTUNE_TRAINER_LOG_LEVEL", "warning")

P = [{"role": "user", "content": "I feel sad today"}]


def tiny_run(run_id="r1", algorithm="grpo", lora=None, seed=3, **hp):
    hyper = {"learning_rate": 1e-2, "value_learning_rate": 1e-2, "micro_batch_size": 2}
    hyper.update(hp)
    return {
        "run_id": run_id,
        "base_model": "tiny-random",
        "algorithm": algorithm,
        "lora": lora,
        "hyperparameters": hyper,
        "seed": seed,
    }


def fixed_samples(step: int, n_groups: int = 2, per_group: int = 3):
    words = ["I hear you", "that sounds hard", "ok", "tell me more about it", "sorry", "calm down"]
    out = []
    for g in range(n_groups):
        for k in range(per_group):
            c = words[(step + g + k) % len(words)]
            out.append(
                {
                    "prompt": [{"role": "user", "content": f"scenario {g}: I feel lonely"}],
                    "completion": c,
                    "reward": ((step * 7 + g * 3 + k * 5) % 11) / 10.0,
                    "group": f"g{g}",
                }
            )
    return out


@pytest.fixture
def engine(tmp_path):
    from attune_trainer.engine.engine import Engine

    return Engine(tmp_path / "state", device="cpu")


class Service:
    """A real `python -m attune_trainer serve` subprocess on a free port."""

    def __init__(self, state_dir: Path, env_extra=None, args=()):
        env = dict(os.environ)
        env.update(env_extra or {})
        self.log_path = state_dir.parent / f"service-{int(time.time() * 1000)}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "attune_trainer",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--state-dir",
                str(state_dir),
                "--threads",
                "1",
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )
        self.url = None
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                if self.proc.poll() is not None:
                    raise RuntimeError("service exited: " + self.log_path.read_text()[-3000:])
                continue
            m = re.search(r"listening on (https?://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        if not self.url:
            self.kill()
            raise RuntimeError("service did not start")
        # drain stdout in the background so the child never blocks on a full pipe
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.log.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def service_factory():
    started = []

    def start(state_dir, env_extra=None, args=()):
        s = Service(state_dir, env_extra, args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()


def wait_for_snapshot(state_dir: Path, run_id: str, step: int, timeout: float = 120) -> Path:
    """The folder of snapshot `step` once committed: a full-weight one is written in the background."""
    d = state_dir / "runs" / run_id / "checkpoints" / f"step-{step:06d}"
    deadline = time.time() + timeout
    while not (d / "state.json").exists():
        assert time.time() < deadline, f"snapshot {step} of {run_id} was never committed"
        time.sleep(0.05)
    return d


def policy_tensors(state_dir: Path, run_id: str, step: int) -> dict:
    """Weights of a checkpoint (adapter or full model) plus the critic, as tensors: from the policy
    directory and critic file, or from a sharded (full-weight) snapshot."""
    from safetensors.torch import load_file

    from attune_trainer.state.sharded_snapshots import is_sharded, read_tensors

    d = wait_for_snapshot(state_dir, run_id, step)
    if is_sharded(d):
        parts = ("policy", "critic")
        return {f"{k.replace('.', '/', 1)}": v for k, v in read_tensors(d).items() if k.split(".", 1)[0] in parts}
    out = {}
    for f in sorted((d / "policy").glob("*.safetensors")):
        out.update({f"policy/{k}": v for k, v in load_file(str(f)).items()})
    if (d / "critic.safetensors").exists():
        out.update({f"critic/{k}": v for k, v in load_file(str(d / "critic.safetensors")).items()})
    return out


def optimizer_tensors(state_dir: Path, run_id: str, step: int, models=("policy",)) -> dict:
    """The AdamW states of a snapshot's `models` (policy, critic), by model, parameter and field
    (either snapshot format)."""
    from attune_trainer.state.sharded_snapshots import is_sharded, read_tensors

    d = wait_for_snapshot(state_dir, run_id, step)
    out = {}
    if is_sharded(d):
        tensors = read_tensors(d)
        for model in models:
            prefix = f"{model}_optim.state."
            out.update({f"adam/{model}/{k[len(prefix) :]}": v for k, v in tensors.items() if k.startswith(prefix)})
        return out
    opt = torch.load(d / "optimizer.pt", weights_only=True)
    for model in models:
        for param, fields in opt[model]["state"].items():
            out.update({f"adam/{model}/{param}.{name}": torch.as_tensor(v) for name, v in fields.items()})
    return out
