"""Recovery by replay: a run loaded from its newest complete snapshot applies the logged steps after it.

The run's committed step is its newest stored result (or snapshot); the steps between the snapshot
and it are applied again, in order, from their log entries, which gives the same weights bit for bit
on CPU (each step reseeds its RNG from the logged seeds). Their results stay the stored ones: the
workflow sees each step applied once. A log entry past the committed step belongs to a step that
never committed (the crash came between its entry and its result) and is dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from attune_trainer.log import log
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.step_log import StepLog

# Applies one logged step to the run's weights in memory (the engine's update; `state` cannot import it).
ReplayStep = Callable[[LoadedRun, dict], None]


class ReplayError(RuntimeError):
    """The log cannot bring the run to its committed step: an entry is missing or does not match."""


def replay_logged_steps(run: LoadedRun, replay_step: ReplayStep | None) -> int:
    """Bring `run` from its snapshot step to its committed step; returns the number of steps replayed."""
    store = run.store
    steplog = StepLog(store.dir)
    committed = store.last_applied_step()
    steplog.drop(lambda s: s <= committed)
    todo = list(range(run.step + 1, committed + 1))
    if not todo:
        return 0
    if replay_step is None:
        raise ReplayError(f"run {run.run_id!r}: steps {todo} need a replay and no replayer is set")
    t0 = time.time()
    for step in todo:
        entry = steplog.read(step)
        if entry is None:
            raise ReplayError(f"run {run.run_id!r}: step {step} is committed but its log entry is gone")
        replay_step(run, entry)
        run.step = step
    log("info", "logged steps replayed", run_id=run.run_id, steps=todo, seconds=round(time.time() - t0, 3))
    return len(todo)
