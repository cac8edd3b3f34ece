"""How a step becomes durable: the one place the step code calls (`engine/steps.py`).

1. `begin`: before the update changes the weights, the step's log entry is made durable.
2. `commit`: a snapshot step writes its snapshot (its rename commits it, then its result is
   stored); any other step is committed by its stored result, its log entry being already durable.
   A run that keeps exports (`export_keep`) gets the step's weights in the served dtype as well.
Recovery (`recovery.py`) replays the logged steps after the newest complete snapshot.
"""

from __future__ import annotations

import time

from attune_trainer.compute import Compute, step_seeds
from attune_trainer.faults import FaultInjection
from attune_trainer.state.checkpoints import CheckpointWriter
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
        """Commit the step: by its snapshot on a snapshot step, else by its stored result.

        `stored` gets the step's `seconds` (the whole step, snapshot and export included), its
        `storage` and, in `checkpoint`, where its weights are (null: neither snapshot nor export)."""
        step = stored["step"]
        snapshot = is_snapshot_step(step, run.hp, run.lora is not None)
        exporting = run.hp.export_keep > 0
        # an export in another dtype than the snapshot's is written first, so the step's seconds count it
        link = snapshot and links_snapshot(self.compute, run)
        export = self.exports.write(run, step) if exporting and not link else None
        snapshot_started = time.time()

        def finish(result: dict, snapshot_bytes: int) -> None:
            result["metrics"]["seconds"] = round(time.time() - started, 4)
            result["storage"] = {
                "snapshot": snapshot,
                "bytes_written": log_bytes + snapshot_bytes + (export["bytes"] if export else 0),
                "snapshot_bytes": snapshot_bytes,
                "snapshot_seconds": round(time.time() - snapshot_started, 4) if snapshot else 0.0,
                "export_bytes": export["bytes"] if export else 0,
                "export_seconds": export["seconds"] if export else 0.0,
            }

        if snapshot:
            if export:
                stored["checkpoint"].update(export_path=export["path"], export_format=export["format"])
            self.checkpoints.save(run, step, stored=stored, digest=digest, on_written=finish)
            if exporting and link:
                self.exports.write(run, step, link_snapshot=True)  # hard links: the snapshot's files
            return
        stored["checkpoint"] = (
            {"step": step, "path": None, "export_path": export["path"], "export_format": export["format"]}
            if export
            else None  # the step's weights are the live ones until the next step; a replay can make them again
        )
        finish(stored, 0)
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
        self.faults.fire("after_commit", step)

    def _agree(self, error: Exception | None, message: str) -> None:
        """Every rank fails together when rank 0's write failed."""
        failed = self.compute.any_rank(error is not None)
        if error is not None:
            raise error
        if failed:
            raise RuntimeError(message)
