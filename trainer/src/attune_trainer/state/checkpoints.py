"""Writing a run's checkpoint (a snapshot, see `snapshots.py`): policy (in the form vLLM loads), critic, AdamW states.

Written to a temporary folder, fsynced and renamed into place: the rename is the commit.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import torch

from attune_trainer.compute import Compute, inner_optimizer
from attune_trainer.faults import FaultInjection
from attune_trainer.log import log
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.snapshots import retain
from attune_trainer.state.store import fsync_tree, now

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


class CheckpointWriter:
    def __init__(self, compute: Compute, faults: FaultInjection):
        self.compute = compute
        self.faults = faults

    def save(
        self, run: LoadedRun, step: int, stored: dict | None, digest: str | None, on_written: OnWritten | None = None
    ) -> dict:
        """Save the run's state as checkpoint `step` and commit it. Collective: every rank calls it.

        `on_written(stored, bytes)` runs once the snapshot's files are written, before its marker:
        the stored result then times the whole step, snapshot included."""
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
        elif step == 0:
            # step 0 of full fine-tuning is the base model itself: no copy
            export = {"path": str(run.base_path), "format": "hf_full"}
        else:
            unwrapped.save_pretrained(str(tmp / "policy"), state_dict=policy_sd, safe_serialization=True)
            link_tokenizer(store.tokenizer_dir, tmp / "policy")
            export = {"path": f"checkpoints/step-{step:06d}/policy", "format": "hf_full"}
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


def patch_adapter_config(adapter_dir: Path, base_path: Path) -> None:
    """Make the adapter self-describing for vLLM: base model path, no modules_to_save."""
    p = adapter_dir / "adapter_config.json"
    if not p.exists():
        return
    config = json.loads(p.read_text())
    config["base_model_name_or_path"] = str(base_path)
    config["inference_mode"] = True
    p.write_text(json.dumps(config, indent=2, sort_keys=True))
