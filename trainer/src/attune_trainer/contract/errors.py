"""Domain errors of the trainer: what went wrong and which request field it is about.

The engine raises these and knows nothing of HTTP; `server.py` maps each kind to a status code.
"""

from __future__ import annotations

from pathlib import Path


class TrainerError(Exception):
    """A request the trainer cannot serve as asked; `details` are extra fields of the error body."""

    def __init__(self, message: str, field: str | None = None, **details):
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details


class NotFound(TrainerError):
    """A run, checkpoint or step that does not exist."""


class RunNotFound(NotFound):
    def __init__(self, run_id: str, message: str | None = None):
        super().__init__(message or f"run {run_id!r} not found", field="run_id")
        self.run_id = run_id


class InvalidRunId(RunNotFound):
    """A run id that breaks the run-id rule, or whose directory resolves outside the state directory."""

    def __init__(self, run_id: object, reason: str = "not a valid run id"):
        super().__init__(str(run_id), f"run {str(run_id)[:200]!r} not found ({reason})")


class Conflict(TrainerError):
    """A request that contradicts what the trainer already holds."""


class ConfigConflict(Conflict):
    def __init__(self, run_id: str, differing_keys: list[str]):
        super().__init__(
            f"run {run_id!r} exists with a different config; differing keys: {', '.join(differing_keys)}",
            field=differing_keys[0],
            differing_keys=differing_keys,
        )


class StepConflict(Conflict):
    """A step out of order, or an applied step posted again with other samples."""

    def __init__(self, message: str, field: str, expected_step: int | None = None):
        super().__init__(message, field=field, expected_step=expected_step)


class InvalidRequest(TrainerError):
    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


class DiskFull(TrainerError):
    """The state directory ran out of space while a step was made durable: nothing was applied."""

    def __init__(self, state_dir: Path):
        super().__init__(
            f"disk full: no space left in the state directory {state_dir} while making a step durable "
            "(its log entry, snapshot or result); "
            "the step was not applied: free space there, then retry it",
            state_dir=str(state_dir),
        )


class WeightTransferUnavailable(TrainerError):
    """This host cannot send weights over NCCL: vLLM's trainer-side API or CUDA is missing."""

    def __init__(self, reason: str):
        super().__init__(
            f"NCCL weight transfer is not available on this trainer: {reason}; it needs the trainer's "
            "rank 0 on a CUDA GPU with vLLM installed beside it (or use training.publish.transport: checkpoint)",
            reason=reason,
        )


class WeightTransferTimedOut(TrainerError):
    """A broadcast that did not finish within the publish's deadline: a vLLM worker died or hangs
    mid-transfer. The group was torn down; the next publish joins a new one."""

    def __init__(self, run_id: str, step: int, timeout_seconds: float):
        super().__init__(
            f"the broadcast of {run_id}@{step} did not finish within {timeout_seconds:g} s: a vLLM worker "
            "stopped receiving (it died or hangs); rank 0 left the group, and the next publish makes a new one",
            field="timeout_seconds",
            run_id=run_id,
            step=step,
            timeout_seconds=timeout_seconds,
        )


class WeightTransferNotJoined(Conflict):
    """A broadcast asked for before rank 0 joined a group (or after the trainer restarted)."""

    def __init__(self):
        super().__init__(
            "rank 0 has not joined an NCCL weight-transfer group (the trainer restarted, or none was made): "
            "POST /v1/weight-transfer/group first, together with vLLM's /init_weight_transfer_engine",
            field="group",
        )
