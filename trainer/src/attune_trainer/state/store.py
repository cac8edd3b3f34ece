"""On-disk layout of runs and checkpoints; atomic (write to a temp dir, fsync, rename) commits.

<state_dir>/
  trainer.lock                    the running trainer's lock and pid (state_lock.py)
  models/smollm2-135m/            dequantised SmolLM2 (converted from the GGUF once)
  runs/<run_id>/
    run.json                      {"config": {...normalised request...}, "created": ts}
    tokenizer/                    tokenizer + chat template used by this run
    base/                         tiny-random only: the randomly initialised base model
    checkpoints/step-000003/      one committed snapshot (the rename is the commit); LoRA, or step 0:
      policy/                     LoRA: peft adapter dir (vLLM --enable-lora loadable)
                                  (full fine-tuning before sharded snapshots: HF model dir)
      critic.safetensors          PPO: the critic's trainable tensors (value head, + LoRA or backbone)
      optimizer.pt                AdamW states (policy, critic), kept in the newest 2 checkpoints
      state.json                  {"step", "samples_sha256", "result", "export", ...}
    checkpoints/step-000010/      full fine-tuning past step 0: sharded (sharded_snapshots.py)
      __<rank>_0.distcp, .metadata  each rank's shard, DCP's index; state.json (marker) last
    steplog/step-000004.json      what step 4 needs to be applied again (step_log.py); the checkpoints
                                  are snapshots every `snapshot_every` steps (snapshots.py)
    results/step-000003.json      the stored response of each applied step (never pruned)
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from attune_trainer.contract.errors import InvalidRunId
from attune_trainer.contract.schemas import valid_run_id


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    """The process's umask, read without changing it (Linux); else briefly set and restored."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def readable_like_others(path: Path) -> None:
    """Give every file under `path` the mode a plain open() gives (0o666 less the umask: 0644 by default).

    safetensors writes its files 0600, so a vLLM running as another user could read an adapter's
    config but not its weights. Directories are left as they are (mkdir already honours the umask).
    """
    mode = 0o666 & ~_umask()
    for root, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                os.chmod(p, mode)


def fsync_tree(path: Path) -> None:
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                fd = os.open(os.path.join(root, f), os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError:
                pass
        fsync_dir(Path(root))


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.parent / f".tmp-{path.name}-{uuid.uuid4().hex[:8]}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def step_name(step: int) -> str:
    return f"step-{step:06d}"


def json_steps_in(directory: Path) -> list[int]:
    """The steps of the `step-N.json` files in `directory`, sorted (none when it does not exist)."""
    if not directory.exists():
        return []
    out = []
    for p in directory.glob("step-*.json"):
        try:
            out.append(int(p.name[5:-5]))
        except ValueError:
            pass
    return sorted(out)


class RunStore:
    def __init__(self, state_dir: Path, run_id: str):
        # A run id becomes a path: refuse anything that could name a place outside the runs
        # directory (`..`, `/abs`, a symlink planted there), before anything is read from it.
        if not valid_run_id(run_id):
            raise InvalidRunId(run_id)
        runs_dir = (Path(state_dir) / "runs").resolve()
        run_dir = (runs_dir / run_id).resolve()
        if run_dir.parent != runs_dir:
            raise InvalidRunId(run_id, "it resolves outside the state directory")
        self.state_dir = state_dir
        self.run_id = run_id
        self.dir = run_dir
        self.ckpt_dir = self.dir / "checkpoints"
        self.results_dir = self.dir / "results"
        self.tokenizer_dir = self.dir / "tokenizer"
        self.base_dir = self.dir / "base"

    def exists(self) -> bool:
        return (self.dir / "run.json").exists()

    def read_meta(self) -> dict:
        return json.loads((self.dir / "run.json").read_text())

    def committed_steps(self) -> list[int]:
        if not self.ckpt_dir.exists():
            return []
        out = []
        for p in self.ckpt_dir.iterdir():
            if p.name.startswith("step-") and (p / "state.json").exists():
                try:
                    out.append(int(p.name[5:]))
                except ValueError:
                    pass
        return sorted(out)

    def latest_step(self) -> int | None:
        steps = self.committed_steps()
        return steps[-1] if steps else None

    def result_steps(self) -> list[int]:
        return json_steps_in(self.results_dir)

    def last_applied_step(self) -> int:
        """The run's step: a step is committed by its snapshot or, between snapshots, its stored result."""
        return max([0, *self.committed_steps(), *self.result_steps()])

    def ckpt(self, step: int) -> Path:
        return self.ckpt_dir / step_name(step)

    def read_state(self, step: int) -> dict:
        return json.loads((self.ckpt(step) / "state.json").read_text())

    def new_tmp_ckpt(self, step: int) -> Path:
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.ckpt_dir / f".tmp-{step_name(step)}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        tmp.mkdir()
        return tmp

    def commit_ckpt(self, tmp: Path, step: int, state: dict) -> Path:
        """Write state.json last, fsync everything, then rename into place (the commit point)."""
        write_json_atomic(tmp / "state.json", state)
        readable_like_others(tmp)
        fsync_tree(tmp)
        final = self.ckpt(step)
        if final.exists():  # cannot happen through the API (steps are sequential); be safe
            shutil.rmtree(final)
        os.replace(tmp, final)
        fsync_dir(self.ckpt_dir)
        return final

    def cleanup_tmp(self) -> int:
        n = 0
        for d in (self.ckpt_dir, self.results_dir, self.dir, self.dir / "steplog", self.dir / "exports"):
            if d.exists():
                for p in d.iterdir():
                    if p.name.startswith(".tmp-"):
                        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                        n += 1
        return n

    def result_path(self, step: int) -> Path:
        return self.results_dir / f"{step_name(step)}.json"

    def read_result(self, step: int) -> dict | None:
        p = self.result_path(step)
        if p.exists():
            return json.loads(p.read_text())
        c = self.ckpt(step) / "state.json"
        if c.exists():
            return json.loads(c.read_text()).get("stored")
        return None

    def write_result(self, step: int, stored: dict) -> None:
        self.results_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.result_path(step), stored)

    def reconcile_results(self) -> None:
        """A crash after the checkpoint rename but before results/ was written: copy it over."""
        for s in self.committed_steps():
            if s > 0 and not self.result_path(s).exists():
                st = self.read_state(s)
                if st.get("stored"):
                    self.write_result(s, st["stored"])

    def prune(self, keep_weights: int, keep_optimizer: int = 2) -> None:
        steps = self.committed_steps()
        for s in steps[:-keep_optimizer] if keep_optimizer else []:
            opt = self.ckpt(s) / "optimizer.pt"
            if opt.exists():
                opt.unlink()
        if keep_weights > 0:
            for s in steps[:-keep_weights]:
                if s == 0:
                    continue
                shutil.rmtree(self.ckpt(s), ignore_errors=True)

    def export_info(self, step: int) -> dict | None:
        try:
            st = self.read_state(step)
        except FileNotFoundError:
            return None
        exp = dict(st.get("export") or {})
        if "path" in exp and not os.path.isabs(exp["path"]):
            exp["path"] = str((self.dir / exp["path"]).resolve())
        return exp


def now() -> float:
    return round(time.time(), 3)
