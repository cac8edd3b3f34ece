"""A sharded full-weight snapshot's policy as a Hugging Face model directory, made when asked.

A sharded snapshot (`sharded_snapshots.py`) holds no directory transformers or vLLM can load. A step
whose only weights are such a snapshot gets one on demand: `attune export` writes it into its output
(the state directory stays read-only), and the trainer's weights route materialises it once as the
step's export (`exports/step-k`, committed like any export: temporary folder, marker, rename). Both
write the same fp32 tensors with the same `save_pretrained`, so their safetensors are byte-identical.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import torch

from attune_trainer.contract.schemas import RunCreate
from attune_trainer.models import load_causal_lm, resolve_base
from attune_trainer.state.checkpoints import link_tokenizer
from attune_trainer.state.sharded_snapshots import is_sharded, read_tensors
from attune_trainer.state.snapshots import is_complete
from attune_trainer.state.step_weights import EXPORT_MARKER, export_path, exports_dir
from attune_trainer.state.store import RunStore, fsync_dir, fsync_tree, readable_like_others
from attune_trainer.state.weights_files import store_weights_manifest

POLICY_PREFIX = "policy."


def sharded_snapshot(store: RunStore, step: int) -> Path | None:
    """The folder of `step`'s committed, complete sharded snapshot, or None."""
    folder = store.ckpt(step)
    return folder if step > 0 and is_complete(store, step) and is_sharded(folder) else None


def save_snapshot_policy(store: RunStore, folder: Path, dest: Path) -> None:
    """The snapshot's policy weights (fp32, as trained) on the run's base architecture, saved to `dest`."""
    spec = RunCreate.model_validate(store.read_meta()["config"])
    model = load_causal_lm(resolve_base(spec.base_model, Path(store.state_dir), store.dir), torch.float32)
    tensors = read_tensors(folder, POLICY_PREFIX)
    policy = {name[len(POLICY_PREFIX) :]: t for name, t in tensors.items()}
    loaded = model.load_state_dict(policy, strict=False)
    model.tie_weights()  # a tied weight is stored once, under one of its names
    stored_at = {p.data_ptr() for n, p in model.named_parameters(remove_duplicate=False) if n in policy}
    tied = {n for n, p in model.named_parameters(remove_duplicate=False) if p.data_ptr() in stored_at}
    untied = [n for n in loaded.missing_keys if n not in tied] + list(loaded.unexpected_keys)
    if untied or not policy:
        raise RuntimeError(f"{folder}: its policy does not fit run {store.run_id!r}'s model: {untied[:5] or 'empty'}")
    model.save_pretrained(str(dest), safe_serialization=True)


def materialised_snapshot_weights(store: RunStore, step: int) -> dict | None:
    """`{"path", "format"}` of `step`'s weights made from its sharded snapshot as the step's export
    (once: a second ask finds the export), or None when the step has no such snapshot."""
    folder = sharded_snapshot(store, step)
    if folder is None:
        return None
    final = export_path(store, step)
    if not (final / EXPORT_MARKER).exists():
        exports_dir(store).mkdir(parents=True, exist_ok=True)
        tmp = exports_dir(store) / f".tmp-{final.name}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        tmp.mkdir()
        try:
            save_snapshot_policy(store, folder, tmp)
            link_tokenizer(store.tokenizer_dir, tmp)
            marker = {"step": step, "format": "hf_full", "dtype": "float32", "from": "sharded snapshot"}
            (tmp / EXPORT_MARKER).write_text(json.dumps(marker))
            store_weights_manifest(tmp)
            readable_like_others(tmp)
            fsync_tree(tmp)
            if (final / EXPORT_MARKER).exists():  # made meanwhile by another request
                shutil.rmtree(tmp)
            else:
                shutil.rmtree(final, ignore_errors=True)
                os.replace(tmp, final)
                fsync_dir(exports_dir(store))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return {"path": str(final.resolve()), "format": "hf_full"}
