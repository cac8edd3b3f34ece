"""The trainer engine: one state directory's runs, their exactly-once steps and sampling.

It composes the parts (`compute.py` device and ranks, `runs.py` the run registry, `steps.py` the
step protocol, `update.py` the PPO/GRPO update, `checkpoints.py`, `serving.py` sampling) and is
what `dispatch.py` runs on every rank and `server.py` serves over HTTP.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import torch

from attune_trainer.compute import Compute
from attune_trainer.engine.prometheus import TrainerMetrics
from attune_trainer.engine.steps import StepApplier
from attune_trainer.faults import FaultInjection
from attune_trainer.log import log
from attune_trainer.serving.serving import Sampler
from attune_trainer.state.checkpoints import CheckpointWriter
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.runs import RunRegistry
from attune_trainer.state.state_lock import StateDirLock
from attune_trainer.state.store import RunStore
from attune_trainer.update.step_pad import StepPad


class Engine:
    def __init__(
        self,
        state_dir: Path,
        device: str = "auto",
        dtype: str = "auto",
        max_loaded_runs: int = 4,
        models_dir: Path | None = None,
        min_step_seconds: float = 0.0,
    ):
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.compute = Compute(device, dtype)
        # one trainer per state directory (rank 0 holds it for all ranks); taken before the
        # start-up clean-up, which would otherwise delete another trainer's in-flight checkpoints
        self.state_lock = StateDirLock(self.state_dir) if self.compute.is_main else None
        faults = FaultInjection.from_env()  # tests only; off unless its environment variable is set
        checkpoints = CheckpointWriter(self.compute, faults)
        self.runs = RunRegistry(self.state_dir, self.compute, checkpoints, max_loaded_runs, models_dir)
        self.metrics = TrainerMetrics()
        pad = StepPad(min_step_seconds)
        if pad.min_seconds > 0:
            log("warning", "every step takes at least min_step_seconds (a benchmark knob)", seconds=pad.min_seconds)
        self.steps = StepApplier(self.compute, self.runs, checkpoints, faults, self.metrics, pad)
        self.sampler = Sampler(self.compute, self.runs)
        self.runs.remove_unfinished()
        log(
            "info",
            "engine ready",
            device=str(self.device),
            dtype=self.dtype_name,
            world_size=self.world,
            state_dir=str(self.state_dir),
            torch=torch.__version__,
        )

    # where the tensors live
    @property
    def acc(self):
        return self.compute.acc

    @property
    def device(self) -> torch.device:
        return self.compute.device

    @property
    def dtype_name(self) -> str:
        return self.compute.dtype_name

    @property
    def world(self) -> int:
        return self.compute.world

    @property
    def rank(self) -> int:
        return self.compute.rank

    @property
    def is_main(self) -> bool:
        return self.compute.is_main

    # runs
    @property
    def loaded(self) -> OrderedDict[str, LoadedRun]:
        return self.runs.loaded

    def run_store(self, run_id: str) -> RunStore:
        return self.runs.store(run_id)

    def create_run(self, req: dict) -> tuple[bool, dict]:
        return self.runs.create_run(req)

    def run_state(self, run_id: str) -> dict:
        return self.runs.run_state(run_id)

    def list_runs(self) -> list[str]:
        return self.runs.list_runs()

    def ensure_loaded(self, run_id: str) -> LoadedRun:
        return self.runs.ensure_loaded(run_id)

    def close(self) -> None:
        """Wait for the runs' background snapshot writes (each rank its own): call before exiting."""
        self.runs.close()

    # steps and sampling
    def apply_step(self, run_id: str, req: dict) -> dict:
        return self.steps.apply_step(run_id, req)

    def export_current(self, run_id: str, step: int) -> None:
        self.steps.export_current(run_id, step)

    def chat(self, req: dict) -> dict:
        return self.sampler.chat(req)

    def models(self) -> list[dict]:
        return self.sampler.models()
