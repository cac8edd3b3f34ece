"""Writing a run's checkpoint (a snapshot, see `snapshots.py`): policy, critic, AdamW states.

LoRA runs and step 0 are written by rank 0 from full state dicts (the adapter, in the form vLLM loads,
is a few MB; step 0 of full fine-tuning is the base model itself), synchronously. Full weights past
step 0 are sharded (`sharded_snapshots.py`): staged to CPU by the step, written by every rank in the
background (`async_snapshots.py`). Either way into a temporary folder, fsynced, marker last, renamed
into place: the rename is the commit.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from attune_trainer.compute import Compute, inner_optimizer
from attune_trainer.faults import FaultInjection
from attune_trainer.log import log
from attune_trainer.state.async_snapshots import PendingSnapshot, SnapshotWrite
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.sharded_snapshots import FORMAT, stage_to_cpu, state_bytes, training_state
from attune_trainer.state.snapshots import retain
from attune_trainer.state.store import RunStore, fsync_tree, now, step_name

OnWritten = Callable[[dict, int], None]


def tree_bytes(path: Path) -> int:
    """Bytes a write put under `path`: files hard-linked from elsewhere (the run's tokenizer, a
    snapshot's weights) were not written again and do not count."""
    return sum(st.st_size for p in path.rglob("*") if p.is_file() and (st := p.stat()).st_nlink == 1)


def link_tokenizer(tokenizer_dir: Path, dest: Path) -> None:
    """The run's tokenizer files (saved once at its creation) into a model directory, as hard links:
    a full-weight snapshot or export stays a complete model directory without writing them again."""
    for f in tokenizer_dir.iterdir():
        if f.is_file():
            try:
                os.link(f, dest / f.name)
            except OSError:  # another filesystem: copy
                shutil.copy2(f, dest / f.name)


def writes_sharded(run: LoadedRun, step: int) -> bool:
    """Full weights past step 0: a sharded snapshot, written in the background."""
    return run.lora is None and step > 0


@dataclass
class StagedSnapshot:
    """A run's state copied to CPU for a sharded snapshot: what the step waited for."""

    step: int
    state: dict
    bytes: int  # the tensors' bytes over all ranks: what the snapshot's shards hold
    seconds: float  # waiting for the previous write, and the copy
    previous: dict | None  # the previous write's report (`PendingSnapshot.report`), once it is done


class CheckpointWriter:
    def __init__(self, compute: Compute, faults: FaultInjection):
        self.compute = compute
        self.faults = faults
        self._group = None  # the background writes' own process group (gloo), made at the first one

    def stage_sharded(self, run: LoadedRun, step: int) -> StagedSnapshot:
        """Wait for the run's previous snapshot write (its staged copy is freed), then copy the run's
        sharded state to CPU. Collective: every rank stages its own shard."""
        t0 = time.time()
        previous, run.pending_snapshot = run.pending_snapshot, None
        if previous is not None:
            previous.wait()
        state = stage_to_cpu(training_state(run))
        report = previous.report() if previous is not None else None
        return StagedSnapshot(step, state, state_bytes(state), round(time.time() - t0, 4), report)

    def write_sharded(self, run: LoadedRun, staged: StagedSnapshot, stored: dict, digest: str) -> None:
        """Start writing a staged snapshot in the background; rank 0 commits it once every rank's
        shard is written. Collective (the write's own collectives run on its own process group)."""
        group = self._snapshot_group()
        store = run.store
        folder = store.ckpt_dir / f".tmp-{step_name(staged.step)}-sharded"
        if self.compute.is_main:
            shutil.rmtree(folder, ignore_errors=True)  # a failed earlier attempt at this step
            folder.mkdir(parents=True)
        self.compute.barrier()
        commit = None
        if self.compute.is_main:
            state = {"step": staged.step, "samples_sha256": digest, "stored": copy.deepcopy(stored)}
            commit = partial(_commit_sharded, store, state, folder, run.hp.keep_checkpoints)
        write = SnapshotWrite(run.run_id, staged.step, staged.state, folder, group, commit, self.faults.hold_snapshot)
        staged.state = {}  # the writer owns the copy now
        run.pending_snapshot = PendingSnapshot(write)

    def _snapshot_group(self):
        """A gloo group for the background writes, so that their collectives never interleave with a
        step's on the default group. Made collectively, at the first sharded snapshot of any run."""
        import torch.distributed as dist

        if self.compute.world == 1 or not dist.is_initialized():
            return None
        if self._group is None:
            self._group = dist.new_group(backend="gloo")
        return self._group

    def save(
        self, run: LoadedRun, step: int, stored: dict | None, digest: str | None, on_written: OnWritten | None = None
    ) -> dict:
        """Save a LoRA run's state, or step 0 of any run, as checkpoint `step` and commit it.
        Collective: every rank calls it.

        `on_written(stored, bytes)` runs once the snapshot's files are written, before its marker:
        the stored result then times the whole step, snapshot included."""
        if writes_sharded(run, step):
            raise ValueError(f"step {step} of full-weight run {run.run_id!r} is a sharded snapshot: use write_sharded")
        compute = self.compute
        acc = compute.acc
        need_policy = run.lora is not None or step > 0
        # full state dicts on rank 0 (FSDP gathers the shards); collective, same on all ranks
        policy_sd = acc.get_state_dict(run.policy) if need_policy else None
        critic_sd = acc.get_state_dict(run.critic) if run.critic is not None else None
        optimizer_states = None
        if step > 0:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

            options = StateDictOptions(full_state_dict=True, cpu_offload=True)
            optimizer_states = {
                "policy": get_optimizer_state_dict(run.policy, inner_optimizer(run.policy_opt), options=options)
            }
            if run.critic is not None:
                optimizer_states["critic"] = get_optimizer_state_dict(
                    run.critic, inner_optimizer(run.critic_opt), options=options
                )
        error = None
        if compute.is_main:
            try:
                self._write(run, step, stored, digest, policy_sd, critic_sd, optimizer_states, on_written)
            except Exception as e:  # noqa: BLE001 - re-raised below, after every rank has heard of it
                error = e
        # every rank learns whether rank 0's write failed, so all of them fail the step together
        failed = compute.any_rank(error is not None)
        if error is not None:
            raise error
        if failed:
            raise RuntimeError(f"rank 0 failed to write the checkpoint of step {step} of run {run.run_id!r}")
        run.step = step
        return {"step": step, "path": str(run.store.ckpt(step).resolve())}

    def _write(self, run, step, stored, digest, policy_sd, critic_sd, optimizer_states, on_written) -> None:
        store = run.store
        tmp = store.new_tmp_ckpt(step)
        unwrapped = self.compute.unwrap(run.policy)
        if run.lora is not None:
            unwrapped.save_pretrained(str(tmp / "policy"), state_dict=policy_sd, safe_serialization=True)
            patch_adapter_config(tmp / "policy", run.base_path)
            export = {"path": f"checkpoints/step-{step:06d}/policy", "format": "peft_lora"}
        else:
            # step 0 of full fine-tuning is the base model itself: no copy (later steps: write_sharded)
            export = {"path": str(run.base_path), "format": "hf_full"}
        if critic_sd is not None:
            from safetensors.torch import save_file

            trainable = {n for n, p in self.compute.unwrap(run.critic).named_parameters() if p.requires_grad}
            save_file(
                {k: v.detach().to("cpu").contiguous() for k, v in critic_sd.items() if k in trainable},
                str(tmp / "critic.safetensors"),
            )
        self.faults.fire("during_commit", step, where=str(tmp))
        if optimizer_states is not None:
            torch.save(optimizer_states, tmp / "optimizer.pt")
        self.faults.delay_commit(step)
        if stored is not None and on_written is not None:
            fsync_tree(tmp)  # durable before it is timed (the commit's own fsync then finds little left)
            on_written(stored, tree_bytes(tmp))
        state = {
            "step": step,
            "samples_sha256": digest,
            "stored": stored,
            "export": export,
            "created": now(),
            "run_id": run.run_id,
        }
        store.commit_ckpt(tmp, step, state)
        log("info", "checkpoint committed", run_id=run.run_id, step=step)
        self.faults.fire("after_commit", step)
        if stored is not None:
            store.write_result(step, stored)
        retain(store, run.hp.keep_checkpoints)


def _commit_sharded(
    store: RunStore, state: dict, folder: Path, keep_weights: int, seconds: float, written: int
) -> None:
    """Rank 0, once every rank's shard and the `.metadata` are durable: marker, rename, retention."""
    step = state["step"]
    marker = {**state, "format": FORMAT, "export": None, "created": now(), "run_id": store.run_id}
    store.commit_ckpt(folder, step, {**marker, "write_seconds": seconds, "bytes": written})
    log("info", "checkpoint committed", run_id=store.run_id, step=step, sharded=True)
    retain(store, keep_weights)


def patch_adapter_config(adapter_dir: Path, base_path: Path) -> None:
    """Make the adapter self-describing for vLLM: base model path, no modules_to_save."""
    p = adapter_dir / "adapter_config.json"
    if not p.exists():
        return
    config = json.loads(p.read_text())
    config["base_model_name_or_path"] = str(base_path)
    config["inference_mode"] = True
    p.write_text(json.dumps(config, indent=2, sort_keys=True))
