"""The trainer internals the GPU benchmark uses, imported in one place (module paths move here only)."""

from __future__ import annotations

from attune_trainer import log as trainer_log
from attune_trainer.engine.engine import Engine
from attune_trainer.state.snapshots import is_snapshot_step
from attune_trainer.tiny_tokenizer import build_tiny_tokenizer


def quiet() -> None:
    trainer_log.set_level("warning")


def new_engine(state_dir, device: str, dtype: str, models_dir) -> Engine:
    return Engine(state_dir, device=device, dtype=dtype, models_dir=models_dir)


def live_policy(engine: Engine, run_id: str):
    return engine.ensure_loaded(run_id).policy


def checkpoint_policy(engine: Engine, run_id: str, step: int):
    """The policy of step `step` (the run's current one) as the trainer reloads it from disk (its sampler's path).

    A full-weight snapshot is sharded and holds no loadable model, and a step between snapshots has
    none: the step's export in the served dtype (what a vLLM publish reads) is written first, outside
    the timed steps. Decided from the run's settings, the same on every rank (the export is collective)."""
    run = engine.ensure_loaded(run_id)
    if run.lora is None or not is_snapshot_step(step, run.hp, lora=True):
        engine.steps.durable.exports.write(run, step)
    return engine.sampler._checkpoint_model(run, step)


def wait_for_snapshot(engine: Engine, run_id: str) -> dict | None:
    """Until the run's background snapshot write, if one was started, is done: its step, whether it
    committed, its seconds and bytes (as a later step's `storage.previous_snapshot` reports them)."""
    pending = engine.ensure_loaded(run_id).pending_snapshot
    if pending is None:
        return None
    pending.wait()
    return pending.summary()


def unwrap(engine: Engine, model):
    return engine.compute.unwrap(model)


__all__ = [
    "Engine",
    "build_tiny_tokenizer",
    "checkpoint_policy",
    "live_policy",
    "new_engine",
    "quiet",
    "unwrap",
    "wait_for_snapshot",
]
