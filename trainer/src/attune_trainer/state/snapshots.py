"""Which steps write a snapshot (weights + AdamW states), which snapshots may be loaded, which are kept.

A snapshot is a checkpoint directory (`checkpoints.py` writes it into a temporary folder, fsyncs it,
writes `state.json` last as its marker and renames it into place). Loadable means committed (the
marker is there) and complete: step 0; or its AdamW states are there (`optimizer.pt`: LoRA, and
full-weight snapshots written before they were sharded); or, sharded (full weights), its DCP
`.metadata` reads and names only shards that are there whole (`sharded_snapshots.shards_complete`).
A directory without its marker was cut off and is never loaded, nor one with a missing or short shard.
The RNG needs no snapshot: every step reseeds from the run's seed and its step number
(`compute.step_seeds`), and the step log records those seeds.
"""

from __future__ import annotations

import shutil

from attune_trainer.contract.schemas import Hyperparameters
from attune_trainer.state.sharded_snapshots import is_sharded, shards_complete
from attune_trainer.state.step_log import StepLog
from attune_trainer.state.store import RunStore

# Snapshots kept with their AdamW states: recovery needs the newest; the one before is the margin
# for a newest one that cannot be read. Older checkpoints keep only their weights (keep_checkpoints).
KEEP_SNAPSHOTS = 2
MARKER = "state.json"
OPTIMIZER = "optimizer.pt"


# Default steps per snapshot: a LoRA snapshot is a few MB, so every step; full weights write the
# policy and its AdamW moments (16 bytes a parameter), so every 10 steps, the steps between durable by the log.
DEFAULT_EVERY_LORA = 1
DEFAULT_EVERY_FULL = 10


def snapshot_every(hp: Hyperparameters, lora: bool) -> int:
    """Steps per snapshot: the run's `snapshot_every`, else the mode's default."""
    return hp.snapshot_every or (DEFAULT_EVERY_LORA if lora else DEFAULT_EVERY_FULL)


def is_snapshot_step(step: int, hp: Hyperparameters, lora: bool) -> bool:
    return step % snapshot_every(hp, lora) == 0


def is_complete(store: RunStore, step: int) -> bool:
    """Committed (marker written last) and with the AdamW states a resumed run needs."""
    d = store.ckpt(step)
    if not (d / MARKER).exists():
        return False
    if step == 0:
        return True
    return shards_complete(d) if is_sharded(d) else (d / OPTIMIZER).exists()


def newest_snapshot(store: RunStore) -> int | None:
    """The snapshot recovery loads: the newest complete one."""
    complete = [s for s in store.committed_steps() if is_complete(store, s)]
    return complete[-1] if complete else None


def retain(store: RunStore, keep_weights: int) -> None:
    """Keep the AdamW states of the last KEEP_SNAPSHOTS snapshots, the weights `keep_weights` asks
    for (0 = all: exports and `run@step` read them), and the log entries after the oldest kept snapshot.
    A sharded snapshot is weights and AdamW states in the same shards, read by recovery only (exports
    serve its weights): it is kept whole in the last KEEP_SNAPSHOTS, else removed."""
    store.prune(keep_weights, keep_optimizer=KEEP_SNAPSHOTS)
    for s in store.committed_steps()[:-KEEP_SNAPSHOTS]:
        if is_sharded(store.ckpt(s)):
            shutil.rmtree(store.ckpt(s), ignore_errors=True)
    complete = [s for s in store.committed_steps() if is_complete(store, s)]
    if complete:
        oldest = complete[-KEEP_SNAPSHOTS:][0]
        StepLog(store.dir).drop(lambda s: s > oldest)
