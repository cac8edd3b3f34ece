"""Exporting a committed checkpoint as a Hugging Face directory that transformers, vLLM and peft load.

Read-only on the state directory and takes no lock: checkpoints are committed by rename, so a
running trainer never shows a half-written one. The output is written beside its destination
and renamed into place, so an interrupted export leaves no half directory under the asked name.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import torch

from attune_trainer.state.adapter_files import ADAPTER_FILES
from attune_trainer.state.snapshot_model import save_snapshot_policy, sharded_snapshot
from attune_trainer.state.step_weights import no_weights, step_weights
from attune_trainer.state.store import RunStore, fsync_tree, readable_like_others

# Files of a model directory that make up the weights and the model's own settings.
_MODEL_FILES = ("config.json", "generation_config.json", "model.safetensors.index.json")
PROVENANCE = "attune_export.json"


class ExportError(ValueError):
    """An export that cannot be made as asked; the message names the run, step or path."""


def export_checkpoint(state_dir: Path, run_id: str, step: int, out: Path, merge_lora: bool = False) -> dict:
    """Write `run_id`'s checkpoint `step` to `out`: full weights, or the LoRA adapter (merged on request)."""
    store = RunStore(Path(state_dir), run_id)  # refuses a run id that could name a path elsewhere
    if not store.exists():
        raise ExportError(f"run {run_id!r}: no such run in {store.dir.parent}")
    info = step_weights(store, step)
    sharded = sharded_snapshot(store, step) if info is None else None
    if sharded is not None:
        info = {"path": str(sharded), "format": "hf_full"}
    if info is None:
        hint = ""
        if step == store.last_applied_step():
            # The run's last step between snapshots lives in the trainer process only.
            hint = (
                f"; step {step} is the run's last step: a running trainer writes its weights out when asked "
                f"over HTTP (attune export {run_id}@{step} --trainer-url URL)"
            )
        raise ExportError(no_weights(store, step, "step").message + hint)
    source, fmt = Path(info.get("path", "")), info.get("format")
    if fmt not in ("hf_full", "peft_lora") or not source.is_dir():
        raise ExportError(f"run {run_id!r} step {step}: checkpoint names no policy directory ({info})")
    if merge_lora and fmt != "peft_lora":
        raise ExportError(f"--merge-lora: run {run_id!r} is full fine-tuning, it has no LoRA adapter to merge")
    out = Path(out).resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"--out {out}: already exists and is not an empty directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".tmp-{out.name}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    tmp.mkdir()
    try:
        if sharded is not None:
            save_snapshot_policy(store, sharded, tmp)  # the state directory stays read-only
            _generation_config(tmp)
            kind = "full"
        elif fmt == "hf_full":
            _copy_full(source, tmp)
            kind = "full"
        elif merge_lora:
            _merge_lora(source, tmp)
            kind = "merged"
        else:
            _copy_files(source, tmp, ADAPTER_FILES)
            kind = "lora_adapter"
        _save_tokenizer(store.tokenizer_dir, tmp)
        summary = {"run_id": run_id, "step": step, "format": kind, "path": str(out)}
        (tmp / PROVENANCE).write_text(json.dumps(summary, indent=2, sort_keys=True))
        readable_like_others(tmp)
        fsync_tree(tmp)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return summary


def _copy_files(source: Path, dest: Path, names) -> None:
    for name in names:
        if (source / name).exists():
            shutil.copy2(source / name, dest / name)


def _generation_config(dest: Path) -> None:
    """The trainer turns the KV cache off for training; generation wants it back."""
    config = json.loads((dest / "config.json").read_text())
    config["use_cache"] = True
    (dest / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))


def _copy_full(source: Path, dest: Path) -> None:
    """Safetensors weights are copied as they are; any other format is loaded and saved as safetensors."""
    shards = sorted(source.glob("*.safetensors"))
    if shards:
        _copy_files(source, dest, _MODEL_FILES)
        for shard in shards:
            shutil.copy2(shard, dest / shard.name)
        _generation_config(dest)
        return
    from attune_trainer.models import load_causal_lm

    model = load_causal_lm(source, dtype=torch.float32)
    model.config.use_cache = True
    model.save_pretrained(str(dest), safe_serialization=True)


def _merge_lora(adapter_dir: Path, dest: Path) -> None:
    """Base weights plus the adapter's update, in fp32, as one plain model directory."""
    from peft import PeftModel

    from attune_trainer.models import load_causal_lm

    config = json.loads((adapter_dir / "adapter_config.json").read_text())
    base_path = Path(config.get("base_model_name_or_path") or "")
    if not (base_path / "config.json").exists():
        raise ExportError(f"{adapter_dir / 'adapter_config.json'}: base_model_name_or_path {str(base_path)!r} is gone")
    base = load_causal_lm(base_path, dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    merged.config.use_cache = True
    merged.save_pretrained(str(dest), safe_serialization=True)


def _save_tokenizer(tokenizer_dir: Path, dest: Path) -> None:
    """The run's tokenizer with its chat template, the one the trainer formats prompts with."""
    from attune_trainer.models import load_tokenizer

    load_tokenizer(tokenizer_dir).save_pretrained(str(dest))
