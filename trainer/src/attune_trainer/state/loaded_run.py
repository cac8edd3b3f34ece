"""What a run loaded into memory holds; loading builds it, checkpointing and the update read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attune_trainer.contract.schemas import Hyperparameters, LoraSpec
from attune_trainer.state.store import RunStore


@dataclass
class LoadedRun:
    run_id: str
    config: dict
    hp: Hyperparameters
    lora: LoraSpec | None
    store: RunStore
    base_path: Path
    tokenizer: Any
    policy: Any
    policy_opt: Any
    critic: Any = None
    critic_opt: Any = None
    # full fine-tuning's frozen KL reference, built the first time a step needs it (see `reference.py`)
    ref: Any = None
    step: int = 0
    in_progress_step: int | None = None
    eos_ids: list[int] = field(default_factory=list)
    # a sharded snapshot being written in the background (`async_snapshots.PendingSnapshot`)
    pending_snapshot: Any = None

    def wait_for_snapshot(self) -> None:
        """Until the run's background snapshot write, if any, is done: before its memory is reused."""
        if self.pending_snapshot is not None:
            self.pending_snapshot.wait()
