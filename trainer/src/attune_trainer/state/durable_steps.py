"""How a step becomes durable: the one place the step code calls (`engine/steps.py`).

1. `begin`: before the update changes the weights, the step's log entry is made durable.
2. `commit`: a LoRA snapshot step writes its snapshot (its rename commits it, then its result is
   stored); any other step is committed by its stored result, its log entry being already durable.
   A full-weight snapshot step stages its sharded state to CPU, stores its result, and its snapshot
   is written and committed in the background (`async_snapshots.py`).
   A run that keeps exports (`export_keep`) gets the step's weights in the served dtype as well.
Recovery (`recovery.py`) replays the logged steps after the newest complete snapshot.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from attune_trainer.compute import Compute, step_seeds
from attune_trainer.faults import FaultInjection
from attune_trainer.state.checkpoints import CheckpointWriter, writes_sharded
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.snapshots import is_snapshot_step
from attune_trainer.state.step_exports import ExportWriter, links_snapshot
from attune_trainer.state.step_log import StepLog, log_entry


class DurableSteps:
    def __init__(self, compute: Compute, checkpoints: CheckpointWriter, faults: FaultInjection):
        self.compute = compute
        self.checkpoints = checkpoints
        self.faults = faults
        self.exports = ExportWriter(compute)

    def begin(self, run: LoadedRun, request: dict, digest: str, hyperparameters: dict) -> int:
        """Log the step before it changes anything; returns the entry's bytes (0 on other ranks)."""
        step = request["step"]
        # A background snapshot write that failed fails this step, once, before it changes anything: a
        # full disk (507) waits for the operator instead of losing every later snapshot in silence.
        pending = run.pending_snapshot
        failed = pending.take_error() if pending is not None else None
        self._agree(failed, f"a background snapshot write of run {run.run_id!r} failed on another rank")
        written = 0
        error = None
        if self.compute.is_main:
            entry = log_entry(step, request, digest, hyperparameters, step_seeds(run.config["seed"], step))
            try:
                written = StepLog(run.store.dir).write(entry)
            except Exception as e:  # noqa: BLE001 - re-raised below, after every rank has heard of it
                error = e
        self._agree(error, f"rank 0 failed to log step {step} of run {run.run_id!r}")
        return written

    def commit(self, run: LoadedRun, stored: dict, digest: str, started: float, log_bytes: int) -> None:
        """Commit the step: by its snapshot on a LoRA snapshot step, else by its stored result.

        `stored` gets the step's `seconds` (the whole step, snapshot staging and export included), its
        `storage` and, in `checkpoint`, where its weights are (null: neither snapshot nor export)."""
        step = stored["step"]
        snapshot = is_snapshot_step(step, run.hp, run.lora is not None)
        exporting = run.hp.export_keep > 0
        # a LoRA snapshot's adapter is its export; any other export is written first, so the step's seconds count it
        link = snapshot and links_snapshot(run)
        export = self.exports.write(run, step) if exporting and not link else None
        # the last background snapshot write's seconds and bytes, reported once it is done
        previous = run.pending_snapshot.report() if run.pending_snapshot is not None else None
        timing = _Timing(started, log_bytes, export, snapshot, previous)
        if snapshot and writes_sharded(run, step):
            self._commit_with_sharded_snapshot(run, stored, digest, timing)
        elif snapshot:
            if export:
                stored["checkpoint"].update(export_path=export["path"], export_format=export["format"])
            self.checkpoints.save(run, step, stored=stored, digest=digest, on_written=timing.finish)
            if exporting and link:
                self.exports.write(run, step, link_snapshot=True)  # hard links: the snapshot's files
        else:
            stored["checkpoint"] = _export_checkpoint(step, None, export)
            timing.finish(stored, 0)
            self._store_result(run, stored)

    def _commit_with_sharded_snapshot(self, run: LoadedRun, stored: dict, digest: str, timing: _Timing) -> None:
        """The step waits only for its state's copy to CPU, is committed by its stored result, and its
        snapshot is written in the background (committed later: until then recovery replays the step)."""
        step = stored["step"]
        staged = self.checkpoints.stage_sharded(run, step)
        timing.previous = timing.previous or staged.previous  # a write still in flight was waited for
        stored["checkpoint"] = _export_checkpoint(step, str(run.store.ckpt(step).resolve()), timing.export)
        timing.finish(stored, staged.bytes, staged.seconds)
        stored["storage"]["snapshot_write"] = "background"
        self._store_result(run, stored, after=lambda: self.checkpoints.write_sharded(run, staged, stored, digest))

    def _store_result(self, run: LoadedRun, stored: dict, after: Callable[[], None] | None = None) -> None:
        """Commit a step by its stored result (its log entry is already durable)."""
        step = stored["step"]
        error = None
        if self.compute.is_main:
            try:
                # the test-only fault points of a commit hold here too: its stored result commits the step
                self.faults.fire("during_commit", step, where=str(run.store.dir))
                self.faults.delay_commit(step)
                run.store.write_result(step, stored)
            except Exception as e:  # noqa: BLE001 - re-raised below, after every rank has heard of it
                error = e
        self._agree(error, f"rank 0 failed to store the result of step {step} of run {run.run_id!r}")
        run.step = step
        if after is not None:
            after()
        self.faults.fire("after_commit", step)

    def _agree(self, error: Exception | None, message: str) -> None:
        """Every rank fails together when rank 0's write failed."""
        failed = self.compute.any_rank(error is not None)
        if error is not None:
            raise error
        if failed:
            raise RuntimeError(message)


class _Timing:
    """A step's `seconds` and `storage`, filled in just before the step commits."""

    def __init__(self, started: float, log_bytes: int, export: dict | None, snapshot: bool, previous: dict | None):
        self.previous = previous
        self.started = started
        self.log_bytes = log_bytes
        self.export = export
        self.snapshot = snapshot
        self.snapshot_started = time.time()

    def finish(self, result: dict, snapshot_bytes: int, snapshot_seconds: float | None = None) -> None:
        """`snapshot_seconds`: what the step waited for its snapshot (default: since the export)."""
        export = self.export
        if snapshot_seconds is None:
            snapshot_seconds = round(time.time() - self.snapshot_started, 4) if self.snapshot else 0.0
        result["metrics"]["seconds"] = round(time.time() - self.started, 4)
        result["storage"] = {
            "snapshot": self.snapshot,
            "bytes_written": self.log_bytes + snapshot_bytes + (export["bytes"] if export else 0),
            "snapshot_bytes": snapshot_bytes,
            "snapshot_seconds": snapshot_seconds,
            "export_bytes": export["bytes"] if export else 0,
            "export_seconds": export["seconds"] if export else 0.0,
        }
        if self.previous is not None:
            result["storage"]["previous_snapshot"] = self.previous


def _export_checkpoint(step: int, snapshot_path: str | None, export: dict | None) -> dict | None:
    """A step's `checkpoint`: its snapshot folder and/or export (null: the weights are live only,
    until the next step; a replay can make them again)."""
    if snapshot_path is None and export is None:
        return None
    return {
        "step": step,
        "path": snapshot_path,
        "export_path": export["path"] if export else None,
        "export_format": export["format"] if export else None,
    }
