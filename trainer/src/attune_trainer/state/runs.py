"""The runs of one state directory: creation, their state, and the LRU of runs loaded in memory."""

from __future__ import annotations

import gc
import os
import shutil
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from attune_trainer.compute import Compute
from attune_trainer.contract.errors import ConfigConflict, InvalidRequest, RunNotFound
from attune_trainer.contract.schemas import RunCreate, valid_run_id
from attune_trainer.log import log
from attune_trainer.models import ModelError, build_tiny_random, check_base, load_tokenizer, resolve_base
from attune_trainer.state.checkpoints import CheckpointWriter
from attune_trainer.state.disk_budget import check_fits, estimate
from attune_trainer.state.engine_lock import EngineLock
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.recovery import ReplayStep, replay_logged_steps
from attune_trainer.state.run_loading import load_run
from attune_trainer.state.step_weights import step_weights, steps_with_weights
from attune_trainer.state.store import RunStore, now, readable_like_others, write_json_atomic

# How a run's state is kept, not what it trains: a re-create that changes only these (a run created before
# they existed, or a publish mode that now needs exports) adopts them instead of failing with 409.
STORAGE_SETTINGS = ("hyperparameters.snapshot_every", "hyperparameters.export_keep")


def config_diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested configs."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += config_diff(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else k)
        return out
    return [] if a == b else [prefix]


class RunRegistry:
    def __init__(
        self,
        state_dir: Path,
        compute: Compute,
        checkpoints: CheckpointWriter,
        max_loaded_runs: int,
        models_dir: Path | None = None,
    ):
        self.state_dir = state_dir
        self.models_dir = models_dir  # the only place local base models are loaded from (None: built-ins only)
        self.runs_dir = state_dir / "runs"
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.compute = compute
        self.checkpoints = checkpoints
        self.max_loaded_runs = max_loaded_runs
        self.loaded: OrderedDict[str, LoadedRun] = OrderedDict()
        # serialises heavy work (load, step) in this process; sampling takes it one token at a time
        self.lock = EngineLock()
        # applies a logged step again after a load (the engine's update, set by the engine)
        self.replay_step: ReplayStep | None = None
        # replies being sampled from a run's live weights, by (run, step): a step that would change
        # those weights exports them first when no snapshot has them (the replies go on from the copy)
        self._live_replies: Counter[tuple[str, int]] = Counter()
        self._live_lock = threading.Lock()

    @contextmanager
    def live_reply(self, run_id: str, step: int) -> Iterator[None]:
        with self._live_lock:
            self._live_replies[run_id, step] += 1
        try:
            yield
        finally:
            with self._live_lock:
                self._live_replies[run_id, step] -= 1
                if self._live_replies[run_id, step] <= 0:
                    del self._live_replies[run_id, step]

    def has_live_replies(self, run_id: str, step: int) -> bool:
        with self._live_lock:
            return self._live_replies[run_id, step] > 0

    def store(self, run_id: str) -> RunStore:
        return RunStore(self.state_dir, run_id)

    def remove_unfinished(self) -> None:
        """Start-up: drop half-created runs and uncommitted checkpoints a crash left behind."""
        if not self.compute.is_main:
            return
        for d in self.runs_dir.iterdir():
            if d.name.startswith(".tmp-"):
                shutil.rmtree(d, ignore_errors=True)
            elif d.is_dir() and not d.is_symlink() and valid_run_id(d.name):
                store = self.store(d.name)
                removed = store.cleanup_tmp()
                if removed:
                    log("warning", "removed unfinished checkpoint(s) left by a crash", run_id=d.name, count=removed)
                if store.exists():
                    store.reconcile_results()

    def create_run(self, req: dict) -> tuple[bool, dict]:
        """POST /v1/runs. Returns (created, state). Raises ConfigConflict on a different config."""
        spec = RunCreate.model_validate(req)
        config = spec.model_dump(mode="json")
        store = self.store(spec.run_id)
        with self.lock:
            if store.exists():
                # defaults added since the run was created count as given (a re-create still matches)
                meta = store.read_meta()
                stored = RunCreate.model_validate(meta["config"]).model_dump(mode="json")
                diff = config_diff(stored, config)
                if [key for key in diff if key not in STORAGE_SETTINGS]:
                    raise ConfigConflict(spec.run_id, diff)
                if diff:
                    self._adopt_storage_settings(store, meta, config, diff)
                self.ensure_loaded(spec.run_id)  # completes an interrupted creation
                return False, self.run_state(spec.run_id)
            try:
                check_base(spec.base_model, self.models_dir)
            except ModelError as e:
                raise InvalidRequest("base_model", str(e)) from e
            if self.compute.is_main:
                self._write_new_run(spec, config, store)
            self.compute.barrier()
            try:
                self._check_disk_budget(self.ensure_loaded(spec.run_id))
            except Exception:
                # a run that cannot load (or fit) would stay on disk answering errors for good: never created
                self.evict(spec.run_id)
                self._remove_new_run(store)
                raise
            return True, self.run_state(spec.run_id)

    def _check_disk_budget(self, run: LoadedRun) -> None:
        """Refuse, at its start, a run whose retention cannot fit on this disk (every rank together)."""
        error = None
        if self.compute.is_main:
            served = torch.tensor([], dtype=self.compute.frozen_dtype).element_size()
            try:
                check_fits(run, estimate(run, self.compute.unwrap, served), self.state_dir)
            except InvalidRequest as e:
                error = e
        if self.compute.any_rank(error is not None):
            raise error or InvalidRequest("hyperparameters", "the run's retention does not fit on the trainer's disk")

    def _remove_new_run(self, store: RunStore) -> None:
        if self.compute.is_main:
            shutil.rmtree(store.dir, ignore_errors=True)
            log("warning", "run removed: its first load failed", run_id=store.run_id)
        self.compute.barrier()

    def _adopt_storage_settings(self, store: RunStore, meta: dict, config: dict, diff: list[str]) -> None:
        """The run keeps its state as `config` now asks (STORAGE_SETTINGS only). A loaded run is released, so
        that it is loaded again under them: from its newest snapshot and its step log, as after a restart."""
        hyperparameters = {**meta["config"].get("hyperparameters", {})}
        for key in diff:
            name = key.split(".", 1)[1]
            hyperparameters[name] = config["hyperparameters"][name]
        if self.compute.is_main:
            write_json_atomic(
                store.dir / "run.json", {**meta, "config": {**meta["config"], "hyperparameters": hyperparameters}}
            )
        self.compute.barrier()
        loaded = self.loaded.pop(store.run_id, None)
        if loaded is not None:
            self._release(loaded)
        log("info", "run adopted new storage settings", run_id=store.run_id, changed=diff)

    def _write_new_run(self, spec: RunCreate, config: dict, store: RunStore) -> None:
        tmp = self.runs_dir / f".tmp-{spec.run_id}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if spec.base_model == "tiny-random":
            build_tiny_random(tmp / "base", spec.seed)
            base_path = tmp / "base"
        else:
            base_path = resolve_base(spec.base_model, self.state_dir, models_dir=self.models_dir)
        load_tokenizer(base_path).save_pretrained(tmp / "tokenizer")
        write_json_atomic(tmp / "run.json", {"config": config, "created": now(), "format": 1})
        readable_like_others(tmp)
        os.replace(tmp, store.dir)
        log(
            "info",
            "run created",
            run_id=spec.run_id,
            base_model=spec.base_model,
            algorithm=spec.algorithm,
            lora=spec.lora is not None,
        )

    def run_state(self, run_id: str) -> dict:
        store = self.store(run_id)
        if not store.exists():
            raise RunNotFound(run_id)
        meta = store.read_meta()
        config = meta["config"]
        snapshots = set(store.committed_steps())
        checkpoints = []
        for step in steps_with_weights(store):
            export = step_weights(store, step) or {}
            checkpoints.append(
                {
                    "step": step,
                    # null: an export only (no snapshot of the step's AdamW states)
                    "path": str(store.ckpt(step).resolve()) if step in snapshots else None,
                    "export_path": export.get("path"),
                    "export_format": export.get("format"),
                    "model": f"{run_id}@{step}",
                }
            )
        run = self.loaded.get(run_id)
        return {
            "run_id": run_id,
            "step": store.last_applied_step(),
            "algorithm": config["algorithm"],
            "base_model": config["base_model"],
            "lora": config["lora"],
            "seed": config["seed"],
            "hyperparameters": config["hyperparameters"],
            "checkpoints": checkpoints,
            "created": meta.get("created"),
            "loaded": run is not None,
            "in_progress_step": run.in_progress_step if run else None,
            "model": run_id,
        }

    def list_runs(self) -> list[str]:
        return sorted(
            p.name
            for p in self.runs_dir.iterdir()
            if valid_run_id(p.name) and not p.is_symlink() and (p / "run.json").exists()
        )

    def ensure_loaded(self, run_id: str) -> LoadedRun:
        with self.lock:
            if run_id in self.loaded:
                self.loaded.move_to_end(run_id)
                return self.loaded[run_id]
            store = self.store(run_id)
            if not store.exists():
                raise RunNotFound(run_id)
            while len(self.loaded) >= self.max_loaded_runs:
                old_id, old = self.loaded.popitem(last=False)
                self._release(old)
                log("info", "run unloaded (LRU)", run_id=old_id)
            run = load_run(self.compute, store, self.state_dir, self.checkpoints, self.models_dir)
            try:
                replay_logged_steps(run, self.replay_step)
            except BaseException:
                self._release(run)  # half-replayed weights are never used: the next use starts over
                raise
            self.loaded[run_id] = run
            return run

    def close(self) -> None:
        """Before the trainer exits: every background snapshot write finishes and commits."""
        for run in list(self.loaded.values()):
            run.wait_for_snapshot()

    def evict(self, run_id: str) -> None:
        """Drop a loaded run from memory; its next use reloads it from its newest checkpoint."""
        with self.lock:
            run = self.loaded.pop(run_id, None)
            if run is not None:
                self._release(run)

    def _release(self, run: LoadedRun) -> None:
        run.wait_for_snapshot()  # its background snapshot write finishes (and commits) before the memory goes
        acc = self.compute.acc
        for obj in (run.policy, run.critic, run.ref, run.policy_opt, run.critic_opt):
            for registered in (getattr(acc, "_models", []), getattr(acc, "_optimizers", [])):
                for i in reversed(range(len(registered))):
                    if registered[i] is obj:
                        del registered[i]
        run.policy = run.critic = run.ref = run.policy_opt = run.critic_opt = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
