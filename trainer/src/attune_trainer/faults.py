"""Test-only fault injection: makes a step fail at a chosen point, so tests can show that a failed
step leaves the run at its last committed checkpoint. Off unless `ATTUNE_TRAINER_FAULT_INJECTION`
is set; never set it in production. (`ATTUNE_TRAINER_FAULT_DELAY_S=N`, the other test hook, holds
each step's commit open N seconds so a test can SIGKILL the service mid-step;
`ATTUNE_TRAINER_FAULT_REPLAY_DELAY_S=N` holds each replayed step N seconds, so a test can SIGKILL
the service during a recovery by replay; `ATTUNE_TRAINER_FAULT_SNAPSHOT_DELAY_S=N` holds each background
snapshot write N seconds after its shards are written and before its marker, so a test can SIGKILL
the service while a sharded snapshot is being written and the steps after it go on.)

Syntax: comma-separated `point[@step]:count`, e.g. `during_commit@2:1` (fail once, at step 2) or
`after_update:2` (fail the first two steps that get there). Faults fire only in steps (n >= 1),
never while a run is created. Points:
- `during_update`: in an optimizer update after the step's first one (its gradients are
  accumulated, the earlier update has already changed the weights), before the optimizer step;
- `after_update`: after the update changed weights and optimizer states, before the checkpoint;
- `during_commit`: while the checkpoint is written, as a full disk (`OSError(ENOSPC)`); on a step
  between snapshots, before its result (what commits it) is stored;
- `after_commit`: right after the checkpoint's rename (the commit), before its result is stored; on
  a step between snapshots, right after its result is stored.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass

from attune_trainer.log import log

ENV = "ATTUNE_TRAINER_FAULT_INJECTION"
DELAY_ENV = "ATTUNE_TRAINER_FAULT_DELAY_S"
REPLAY_DELAY_ENV = "ATTUNE_TRAINER_FAULT_REPLAY_DELAY_S"
SNAPSHOT_DELAY_ENV = "ATTUNE_TRAINER_FAULT_SNAPSHOT_DELAY_S"
POINTS = ("during_update", "after_update", "during_commit", "after_commit")


class InjectedFault(RuntimeError):
    """A failure raised on purpose by the test-only fault injection."""


@dataclass
class _Armed:
    point: str
    step: int | None
    remaining: int


class FaultInjection:
    def __init__(
        self, spec: str = "", commit_delay_s: float = 0.0, replay_delay_s: float = 0.0, snapshot_delay_s: float = 0.0
    ):
        self.armed: list[_Armed] = [self._parse(part.strip()) for part in spec.split(",") if part.strip()]
        self.commit_delay_s = commit_delay_s
        self.replay_delay_s = replay_delay_s
        self.snapshot_delay_s = snapshot_delay_s
        if self.armed:
            log("warning", "fault injection is on (tests only)", spec=spec)

    @classmethod
    def from_env(cls) -> FaultInjection:
        return cls(
            os.environ.get(ENV, ""),
            float(os.environ.get(DELAY_ENV, "0") or 0),
            float(os.environ.get(REPLAY_DELAY_ENV, "0") or 0),
            float(os.environ.get(SNAPSHOT_DELAY_ENV, "0") or 0),
        )

    @staticmethod
    def _parse(part: str) -> _Armed:
        where, sep, count = part.rpartition(":")
        point, _, step = where.partition("@")
        if not sep or point not in POINTS or not count.isdigit() or (step and not step.isdigit()):
            raise ValueError(f"{ENV}: {part!r} is not point[@step]:count with a point among {', '.join(POINTS)}")
        return _Armed(point, int(step) if step else None, int(count))

    def fire(self, point: str, step: int, where: str = "") -> None:
        """Raise the fault armed for `point` at `step`, if any is left."""
        if step < 1:
            return
        for armed in self.armed:
            if armed.point == point and armed.remaining > 0 and armed.step in (None, step):
                armed.remaining -= 1
                log("warning", "injected fault", point=point, step=step, remaining=armed.remaining)
                if point == "during_commit":
                    raise OSError(errno.ENOSPC, "No space left on device (injected fault)", where)
                raise InjectedFault(f"injected fault {point} at step {step}")

    def delay_commit(self, step: int) -> None:
        if self.commit_delay_s > 0 and step > 0:
            log("warning", "fault delay before commit", step=step, seconds=self.commit_delay_s)
            time.sleep(self.commit_delay_s)

    def delay_replay(self, step: int) -> None:
        if self.replay_delay_s > 0:
            log("warning", "fault delay before a replayed step", step=step, seconds=self.replay_delay_s)
            time.sleep(self.replay_delay_s)

    def hold_snapshot(self, step: int) -> None:
        """In a background snapshot write: its shards are written, its marker is not (tests only)."""
        if self.snapshot_delay_s > 0:
            log("warning", "fault delay before a snapshot's marker", step=step, seconds=self.snapshot_delay_s)
            time.sleep(self.snapshot_delay_s)
