"""The exactly-once step protocol: step n of a run is applied once; posting it again replays its result.

`step` must be `last + 1`. An applied step posted again returns the stored result (409 if its
samples differ). A step is logged, computed, then committed (`state/durable_steps.py`): by its
snapshot's rename on a snapshot step, else by its stored result.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from attune_trainer.compute import Compute, step_seeds
from attune_trainer.contract.errors import DiskFull, StepConflict
from attune_trainer.contract.schemas import StepRequest
from attune_trainer.engine.prometheus import TrainerMetrics
from attune_trainer.faults import FaultInjection
from attune_trainer.log import log
from attune_trainer.state.checkpoints import CheckpointWriter
from attune_trainer.state.disk_full import out_of_space
from attune_trainer.state.durable_steps import DurableSteps
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.recovery import ReplayError
from attune_trainer.state.runs import RunRegistry
from attune_trainer.state.step_weights import step_weights
from attune_trainer.update.credit import assign_credit
from attune_trainer.update.step_pad import StepPad
from attune_trainer.update.update import PolicyUpdate


def samples_digest(samples: list[dict]) -> str:
    """SHA-256 of the samples' canonical JSON: tells a retried step from a different one."""
    return hashlib.sha256(json.dumps(samples, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class StepApplier:
    def __init__(
        self,
        compute: Compute,
        runs: RunRegistry,
        checkpoints: CheckpointWriter,
        faults: FaultInjection,
        metrics: TrainerMetrics | None = None,
        pad: StepPad | None = None,
    ):
        self.metrics = metrics or TrainerMetrics()
        self.pad = pad or StepPad()
        self.compute = compute
        self.runs = runs
        self.checkpoints = checkpoints
        self.durable = DurableSteps(compute, checkpoints, faults)
        self.faults = faults
        runs.replay_step = self.replay_logged_step  # recovery (state layer) applies logged steps through us

    def apply_step(self, run_id: str, req: dict) -> dict:
        request = StepRequest.model_validate(req)
        # Credit first, and the digest over the samples as trained: a step retried across an upgrade
        # (its turns credited by the orchestrator before, by the trainer now) is the same step.
        request = request.model_copy(update={"samples": assign_credit(request.samples, request.credit), "credit": None})
        digest = samples_digest([s.digest_form() for s in request.samples])
        with self.runs.lock:
            run = self.runs.ensure_loaded(run_id)
            if request.step <= run.step:
                return self._replay(run, request.step, digest)
            if request.step != run.step + 1:
                raise StepConflict(
                    f"run {run_id!r} is at step {run.step}: expected step {run.step + 1}, got {request.step}",
                    field="step",
                    expected_step=run.step + 1,
                )
            stored, committed = self._apply(run, request, digest)
            out = dict(stored)
            out.pop("samples_sha256", None)
            out["replayed"] = False
            # On this host's clock: the client's clock times the publish that follows, from its own start.
            out["commit_to_answer_ms"] = round((time.monotonic() - committed) * 1000, 3)
            return out

    def _replay(self, run: LoadedRun, step: int, digest: str) -> dict:
        """The stored result of an applied step; refused if the samples differ from the applied ones."""
        is_main = self.compute.is_main
        stored = run.store.read_result(step) if is_main else {}
        if is_main and stored is None:
            raise StepConflict(f"step {step} of run {run.run_id!r} was applied but its result is gone", field="step")
        try:
            applied_digest = run.store.read_state(step).get("samples_sha256")
        except FileNotFoundError:
            applied_digest = (stored or {}).get("samples_sha256")
        if is_main and applied_digest and applied_digest != digest:
            raise StepConflict(
                f"step {step} of run {run.run_id!r} was already applied with different samples "
                f"(expected step {run.step + 1})",
                field="samples",
                expected_step=run.step + 1,
            )
        out = dict(stored or {})
        out.pop("samples_sha256", None)
        out["replayed"] = True
        out["commit_to_answer_ms"] = None  # committed by an earlier request
        log("info", "step already applied; returning the stored result", run_id=run.run_id, step=step)
        return out

    def _apply(self, run: LoadedRun, request: StepRequest, digest: str) -> tuple[dict, float]:
        """Update the weights and commit the checkpoint; returns the stored result and the commit's monotonic time."""
        step = request.step
        run.in_progress_step = step
        t0 = time.time()
        started = self.pad.clock()
        try:
            log("info", "applying step", run_id=run.run_id, step=step, samples=len(request.samples))
            update = PolicyUpdate(self.compute, run, request, self.faults)
            self._export_for_live_replies(run)
            # logged before the weights change: the step can be applied again from the newest snapshot
            log_bytes = self.durable.begin(
                run, request.model_dump(mode="json", exclude_none=True), digest, update.hp.model_dump(mode="json")
            )
            metrics = update.apply()
            self.faults.fire("after_update", step)
            self.pad.hold(started)
            metrics["seconds"] = round(time.time() - t0, 4)
            stored = {
                "run_id": run.run_id,
                "step": step,
                "metrics": metrics,
                "samples_sha256": digest,
                # per sample: sampled or re-tokenised, a hash of the completion ids trained on, the gap
                "trained_samples": update.trained_samples,
                "model": f"{run.run_id}@{step}",
                "checkpoint": {
                    "step": step,
                    "path": str(run.store.ckpt(step).resolve()),
                    "export_path": str((run.store.ckpt(step) / "policy").resolve()),
                    "export_format": "peft_lora" if run.lora is not None else "hf_full",
                },
            }
            self.durable.commit(run, stored, digest, t0, log_bytes)
            committed = time.monotonic()
        except Exception as e:
            self.metrics.step_failed()
            self._recover(run, step, e)
            committed = run.store.committed_steps()
            last = run.store.ckpt(committed[-1]) if committed else None
            if out_of_space(e, Path(self.runs.state_dir), last):
                raise DiskFull(self.runs.state_dir) from e
            raise
        finally:
            run.in_progress_step = None
        self.metrics.step_applied(metrics)
        log(
            "info",
            "step applied",
            run_id=run.run_id,
            step=step,
            **{k: metrics[k] for k in ("loss", "reward_mean", "kl", "grad_norm", "tokens", "seconds")},
        )
        return stored, committed

    def _export_for_live_replies(self, run: LoadedRun) -> None:
        """Replies in flight on the live weights go on from a copy once this step changes them: when no
        snapshot or export has the current step's weights, they are exported first (on demand only)."""
        step = run.step
        need = self.runs.has_live_replies(run.run_id, step) and step_weights(run.store, step) is None
        self._export_live(run, need, "live weights exported for replies in flight")

    def _export_live(self, run: LoadedRun, need: bool, why: str) -> None:
        """Exports the live weights as the run's current step when any rank `need`s it (collective)."""
        if self.compute.any_rank(need):
            self.durable.exports.write(run, run.step)
            log("info", why, run_id=run.run_id, step=run.step)

    def export_current(self, run_id: str, step: int) -> None:
        """Puts the run's current step's weights on disk when no snapshot or export holds them (a
        full-weight run that ended between snapshots), so that `attune export` and the adapter and
        weights routes can give the final model. Collective: every rank calls it."""
        store = self.runs.store(run_id)
        if not store.exists() or step != store.last_applied_step() or step_weights(store, step) is not None:
            return  # not the current step, or its weights are on disk already
        if step in store.committed_steps():
            return  # a snapshot: the routes make its model directory from it
        with self.runs.lock:
            run = self.runs.ensure_loaded(run_id)
            need = step == run.step and step_weights(run.store, step) is None
            self._export_live(run, need, "live weights exported for the current step")

    def replay_logged_step(self, run: LoadedRun, entry: dict) -> None:
        """Apply a logged, committed step again (recovery by replay): same samples, settings and seeds."""
        request = StepRequest.model_validate(entry["request"])
        step = request.step
        seed = run.config["seed"]
        if samples_digest([s.digest_form() for s in request.samples]) != entry["samples_sha256"]:
            raise ReplayError(f"run {run.run_id!r}: the log entry of step {step} does not match its digest")
        if entry["seeds"] != step_seeds(seed, step):
            raise ReplayError(f"run {run.run_id!r}: step {step} was logged with other seeds")
        self.faults.delay_replay(step)
        # faults armed for a step are the step's own: its replay is not a new attempt
        update = PolicyUpdate(self.compute, run, request, FaultInjection())
        if update.hp.model_dump(mode="json") != entry["hyperparameters"]:
            raise ReplayError(f"run {run.run_id!r}: step {step} was logged with other hyperparameters")
        run.in_progress_step = step
        try:
            update.apply()
        finally:
            run.in_progress_step = None
        log("info", "logged step replayed", run_id=run.run_id, step=step)

    def _recover(self, run: LoadedRun, step: int, error: Exception) -> None:
        """After a failure inside a step, the run is exactly its newest committed checkpoint.

        The update changed weights, optimizer states and gradients in memory, so the run is dropped
        and reloads from disk at its next use. If the failure came after the commit (the rename),
        the step counts as applied and its retry returns the stored result.
        """
        self.runs.evict(run.run_id)
        store = run.store
        if self.compute.is_main:
            try:
                store.cleanup_tmp()
                store.reconcile_results()
            except OSError as cleanup_error:
                log("warning", "clean-up after a failed step failed", run_id=run.run_id, error=repr(cleanup_error))
        committed = store.last_applied_step()
        log(
            "error",
            "step failed; the run is back at its newest committed checkpoint",
            run_id=run.run_id,
            step=step,
            committed_step=committed,
            applied=committed == step,
            error=repr(error),
        )
