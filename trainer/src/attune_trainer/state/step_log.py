"""The step log: what each step needs to be applied again, made durable before the step changes the weights.

A step is durable by its log entry and its stored result, not by a snapshot of the weights (see
`snapshots.py`): recovery loads the newest complete snapshot and applies the logged steps after it
again (`recovery.py`). An entry holds the request as trained (samples after credit, overrides), its
digest, the hyperparameters in force and the seeds the update draws from.

<run>/steplog/step-000007.json    one entry per step, written by fsync + atomic rename
"""

from __future__ import annotations

import json
from pathlib import Path

from attune_trainer.state.store import json_steps_in, step_name, write_json_atomic

FORMAT = 1


class StepLog:
    def __init__(self, run_dir: Path):
        self.dir = run_dir / "steplog"

    def path(self, step: int) -> Path:
        return self.dir / f"{step_name(step)}.json"

    def write(self, entry: dict) -> int:
        """Make `entry` durable (a retry of an uncommitted step replaces its entry); returns its bytes."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.path(entry["step"])
        write_json_atomic(path, {"format": FORMAT, **entry})
        return path.stat().st_size

    def read(self, step: int) -> dict | None:
        try:
            return json.loads(self.path(step).read_text())
        except FileNotFoundError:
            return None

    def steps(self) -> list[int]:
        return json_steps_in(self.dir)

    def drop(self, keep) -> int:
        """Remove the entries whose step `keep` refuses; returns how many."""
        gone = [s for s in self.steps() if not keep(s)]
        for s in gone:
            self.path(s).unlink(missing_ok=True)
        return len(gone)


def log_entry(step: int, request: dict, digest: str, hyperparameters: dict, seeds: dict) -> dict:
    """The entry of one step: enough to apply it again from the snapshot before it."""
    return {
        "step": step,
        "request": request,
        "samples_sha256": digest,
        "hyperparameters": hyperparameters,
        "seeds": seeds,
    }
