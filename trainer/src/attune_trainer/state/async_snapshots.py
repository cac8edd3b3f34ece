"""A sharded snapshot written in the background: the step that staged it does not wait for its write.

The step copies the run's state to CPU (`sharded_snapshots.stage_to_cpu`) and returns; a thread on
every rank writes that copy into the snapshot's temporary folder (each rank its shard, collective over
a process group of its own, so it never interleaves with the steps' collectives), and rank 0 then
commits it: marker, fsync, rename, retention. The step itself is already durable by its log entry and
stored result, so a crash during the write loses only the snapshot: the temporary folder is removed at
the next start and recovery replays from the snapshot before it (whose log entries retention kept,
since it only counts committed snapshots).

At most one write per run is in flight: the next snapshot, releasing the run's memory (eviction, a
failed step, another run loaded in its place) and the trainer's exit wait for it first (`wait`).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attune_trainer.log import log
from attune_trainer.state.sharded_snapshots import write_shards


@dataclass
class SnapshotWrite:
    """What the background write needs: the staged state and where it goes."""

    run_id: str
    step: int
    state: dict
    folder: Path
    group: Any  # the snapshot writes' own process group (None without one)
    # rank 0: marker, rename, retention, given the write's seconds and bytes; None on other ranks
    commit: Callable[[float, int], None] | None
    # test-only: holds the write after its shards, before its commit (faults.py)
    hold: Callable[[int], None]


class PendingSnapshot:
    """One snapshot being written by a background thread."""

    def __init__(self, write: SnapshotWrite):
        self.step = write.step
        self.run_id = write.run_id
        self.seconds: float | None = None  # the write's, once it is done
        self.bytes = 0
        self.error: BaseException | None = None
        self._reported = False
        self._error_taken = False
        # not a daemon: the interpreter's exit waits for the write rather than cut it off
        self._thread = threading.Thread(target=self._write, args=(write,), name=f"snapshot-{write.step}")
        self._thread.start()

    def _write(self, write: SnapshotWrite) -> None:
        t0 = time.time()
        try:
            write_shards(write.state, write.folder, write.group)
            write.state = {}  # the staged copy is no longer needed: free it before the commit
            write.hold(write.step)
            self.seconds = round(time.time() - t0, 4)
            # Only the committing rank looks at the folder: once every shard is written, rank 0 may
            # rename it before another rank's thread runs again.
            if write.commit is not None:
                self.bytes = sum(p.stat().st_size for p in write.folder.iterdir() if p.is_file())
                write.commit(self.seconds, self.bytes)
            log(
                "info",
                "snapshot written in the background",
                run_id=write.run_id,
                step=write.step,
                write_seconds=self.seconds,
                bytes=self.bytes,
            )
        except BaseException as e:  # noqa: BLE001 - a lost snapshot costs a longer replay, never the run
            self.error = e
            if write.commit is not None:
                shutil.rmtree(write.folder, ignore_errors=True)
            log(
                "error",
                "background snapshot write failed; recovery replays from the snapshot before it",
                run_id=write.run_id,
                step=write.step,
                error=repr(e),
            )

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self) -> None:
        """Until the write is committed (or has failed: the step stays durable by its log)."""
        if self._thread.is_alive():
            t0 = time.time()
            self._thread.join()
            log(
                "info",
                "waited for a background snapshot",
                run_id=self.run_id,
                step=self.step,
                seconds=round(time.time() - t0, 4),
            )

    def take_error(self) -> BaseException | None:
        """Once, after the write failed: its error, for the next step to fail with (a full disk then
        waits for the operator rather than lose every snapshot after it in silence)."""
        if self._error_taken or not self.done() or self.error is None:
            return None
        self._error_taken = True
        return self.error

    def summary(self) -> dict:
        """The write's step, whether it committed, its seconds and bytes (once it is done)."""
        return {"step": self.step, "committed": self.error is None, "write_seconds": self.seconds, "bytes": self.bytes}

    def report(self) -> dict | None:
        """Once, after the write finished: its `summary` (for the next step's record)."""
        if self._reported or not self.done():
            return None
        self._reported = True
        return self.summary()
