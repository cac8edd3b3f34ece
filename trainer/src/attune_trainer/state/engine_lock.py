"""The engine's lock: heavy work (steps, loads, run creation) holds it throughout; sampling holds it
for one token's forward pass at a time, so a step waits for one token, never for a whole reply.

A plain lock hands nothing over on release: a sampling loop that releases and retakes it at once
could keep a waiting step out for the whole reply. So while anyone waits for the lock as a whole,
sampling does not start its next token.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class EngineLock:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._turns = threading.Condition()
        self._waiting = 0  # threads waiting to hold the lock as a whole
        # The thread holding it as a whole (a step, a load), not for one sampling token; its depth.
        self._whole_owner: int | None = None
        self._whole_depth = 0

    def __enter__(self) -> EngineLock:
        with self._turns:
            self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            with self._turns:
                self._waiting -= 1
                self._turns.notify_all()
        self._whole_depth += 1
        self._whole_owner = threading.get_ident()
        return self

    def __exit__(self, *_exc) -> None:
        self._whole_depth -= 1
        if self._whole_depth == 0:
            self._whole_owner = None
        self._lock.release()

    def held_whole_by_another(self) -> bool:
        """Whether another thread holds the lock as a whole now (a step, a load; not a sampling
        token): work that can do without it need not wait. A hint: it may end right after."""
        owner = self._whole_owner
        return owner is not None and owner != threading.get_ident()

    @contextmanager
    def token(self) -> Iterator[None]:
        """One sampling token: waits until no one is waiting for the whole lock, then takes it."""
        # A thread that already holds the lock must not wait for others (they wait for it).
        if not self._lock._is_owned():  # noqa: SLF001 - RLock's own check, as threading.Condition uses it
            with self._turns:
                self._turns.wait_for(lambda: self._waiting == 0)
        with self._lock:
            yield
