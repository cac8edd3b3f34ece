"""One trainer per state directory: an exclusive lock held for the life of the process.

Two trainers on one directory would each keep their own step counter, and each one's start-up
clean-up would delete the other's in-flight checkpoints. The lock is `flock` on
`<state-dir>/trainer.lock`, which holds the holder's pid; the kernel releases it when the process
ends, however it ends.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = "trainer.lock"


class StateDirInUse(RuntimeError):
    def __init__(self, state_dir: Path, holder_pid: str):
        super().__init__(
            f"state directory {state_dir} is in use by another attune-trainer (pid {holder_pid or 'unknown'}); "
            "stop that one or start this one with another --state-dir"
        )
        self.state_dir = state_dir
        self.holder_pid = holder_pid


class StateDirLock:
    def __init__(self, state_dir: Path):
        """Take the lock or raise StateDirInUse naming the holder."""
        self.fd: int | None = None
        self.path = state_dir / LOCK_FILE
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            os.close(fd)
            raise StateDirInUse(state_dir, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        os.fsync(fd)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the only descriptor releases the flock
            self.fd = None

    def __del__(self) -> None:
        self.release()
