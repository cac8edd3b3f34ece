"""What a run's retention will hold on the trainer's disk, estimated at its start from the model's size.

A snapshot holds the policy's weights, its AdamW moments (two tensors per trainable parameter) and,
for PPO, the critic's trainable tensors with theirs. Snapshots keep their AdamW states in the newest
KEEP_SNAPSHOTS; older LoRA ones keep their weights only, up to `keep_checkpoints` (0 = every snapshot:
unbounded, so only the bounded part is checked); older full-weight (sharded) ones are removed.
Exports (`export_keep`) hold the policy in the served dtype. A run whose retention cannot fit on the
free space is refused before its first step.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from attune_trainer.contract.errors import InvalidRequest
from attune_trainer.log import log
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.snapshots import KEEP_SNAPSHOTS, snapshot_every

GB = 1e9


@dataclass(frozen=True)
class RunBytes:
    weights: int  # a snapshot's policy weights (+ the critic's trainable tensors)
    optimizer: int  # a snapshot's AdamW states
    export: int  # one export, in the served dtype
    sharded: bool = False  # full weights: no weights-only snapshot is kept past KEEP_SNAPSHOTS

    @property
    def snapshot(self) -> int:
        return self.weights + self.optimizer

    def retained(self, keep_checkpoints: int, export_keep: int) -> int:
        """Bytes held once the run is past its retention windows (keep_checkpoints 0: the bounded part)."""
        weights_only = 0 if self.sharded else max(keep_checkpoints - KEEP_SNAPSHOTS, 0)
        return KEEP_SNAPSHOTS * self.snapshot + weights_only * self.weights + export_keep * self.export


def _bytes(params, trainable_only: bool) -> int:
    return sum(p.numel() * p.element_size() for p in params if p.requires_grad or not trainable_only)


def estimate(run: LoadedRun, unwrap, served_element_size: int) -> RunBytes:
    """Bytes per snapshot and per export of a loaded run, from its parameters (the files' own sizes)."""
    policy = unwrap(run.policy)
    trainable = _bytes(policy.parameters(), trainable_only=True)
    weights = trainable if run.lora is not None else _bytes(policy.parameters(), trainable_only=False)
    optimizer = 2 * trainable
    if run.critic is not None:
        critic = _bytes(unwrap(run.critic).parameters(), trainable_only=True)
        weights += critic
        optimizer += 2 * critic
    export = trainable if run.lora is not None else sum(p.numel() for p in policy.parameters()) * served_element_size
    return RunBytes(weights=weights, optimizer=optimizer, export=export, sharded=run.lora is None)


def check_fits(run: LoadedRun, estimate_: RunBytes, state_dir: Path) -> None:
    """Refuse a run whose retention cannot fit on the free space of the state directory's disk."""
    hp = run.hp
    free = shutil.disk_usage(state_dir).free
    need = estimate_.retained(hp.keep_checkpoints, hp.export_keep)
    every = snapshot_every(hp, run.lora is not None)
    log(
        "info",
        "run disk budget",
        run_id=run.run_id,
        snapshot_bytes=estimate_.snapshot,
        export_bytes=estimate_.export,
        retained_bytes=need,
        free_bytes=free,
        snapshot_every=every,
    )
    if need <= free:
        return
    b = estimate_
    base = KEEP_SNAPSHOTS * b.snapshot
    if base + hp.export_keep * b.export <= free:
        fits = KEEP_SNAPSHOTS + (free - base - hp.export_keep * b.export) // max(b.weights, 1)
        field, fit = "hyperparameters.keep_checkpoints", f"keep_checkpoints {fits} or less"
    elif base <= free:
        field, fit = "hyperparameters.export_keep", f"export_keep {(free - base) // max(b.export, 1)} or less"
    else:
        field, fit = "hyperparameters.keep_checkpoints", "nothing: free space on the trainer's disk first"
    raise InvalidRequest(
        field,
        f"{field}: run {run.run_id!r} would keep {need / GB:.2f} GB ({KEEP_SNAPSHOTS} snapshots with AdamW states "
        f"of {b.snapshot / GB:.2f} GB, weights of {b.weights / GB:.2f} GB per older snapshot up to keep_checkpoints "
        f"{hp.keep_checkpoints}, {hp.export_keep} exports of {b.export / GB:.2f} GB) but the trainer's disk has "
        f"{free / GB:.2f} GB free; what fits: {fit}",
    )
