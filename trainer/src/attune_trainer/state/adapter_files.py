"""A committed checkpoint's LoRA adapter as files another host can fetch and check.

The manifest lists the adapter's files (name, size, sha256) in name order; its digest is the sha256 of
the lines `<sha256>  <name>\\n` in that order (what `sha256sum` prints over the files, sorted), so a
client, or an operator with `sha256sum`, recomputes it from the files it received. Checkpoints are
committed by rename and never rewritten, so the files a manifest names stay what it says until the
checkpoint is pruned.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from attune_trainer.contract.errors import NotFound, RunNotFound
from attune_trainer.state.step_weights import require_weights, step_weights
from attune_trainer.state.store import RunStore

# The files of a peft adapter that vLLM and peft load; the local export copies the same ones.
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def adapter_digest(files: list[dict]) -> str:
    """sha256 of `<sha256>  <name>\\n` per file, in name order (the manifest's `digest`)."""
    lines = "".join(f"{f['sha256']}  {f['name']}\n" for f in sorted(files, key=lambda f: f["name"]))
    return hashlib.sha256(lines.encode()).hexdigest()


def committed_export(store: RunStore, step: int) -> dict:
    """Where a step's policy weights are on disk (snapshot or export), or NotFound naming what is
    missing: the run, or the step's weights with the nearest steps that have them."""
    if not store.exists():
        raise RunNotFound(store.run_id)
    from attune_trainer.state.snapshot_model import materialised_snapshot_weights  # imports the model code

    if step_weights(store, step) is None:
        # a step whose only weights are a sharded snapshot: its model directory is made once, as its export
        made = materialised_snapshot_weights(store, step)
        if made is not None:
            return made
    return require_weights(store, step)


def adapter_dir(store: RunStore, step: int) -> Path:
    """The adapter directory of `step`, or NotFound naming what is missing (run, step, or a LoRA adapter)."""
    info = committed_export(store, step)
    if info.get("format") != "peft_lora":
        raise NotFound(
            f"run {store.run_id!r} step {step} has no LoRA adapter: the run is full fine-tuning "
            "(fetch its weights from .../weights)",
            field="step",
        )
    path = Path(info.get("path", ""))
    if not (path / ADAPTER_FILES[0]).is_file():
        raise NotFound(
            f"run {store.run_id!r} step {step}: the checkpoint's adapter directory has no {ADAPTER_FILES[0]}",
            field="step",
        )
    return path


def adapter_manifest(store: RunStore, step: int) -> dict:
    """The adapter's files with their sizes and sha256, and the digest over them."""
    directory = adapter_dir(store, step)
    files = [
        {"name": name, "size": (directory / name).stat().st_size, "sha256": file_sha256(directory / name)}
        for name in sorted(ADAPTER_FILES)
        if (directory / name).is_file()
    ]
    return {
        "run_id": store.run_id,
        "step": step,
        "format": "peft_lora",
        "files": files,
        "digest": adapter_digest(files),
    }


def adapter_file(store: RunStore, step: int, name: str) -> Path:
    """One file of the adapter, by its manifest name only (no other path is ever served)."""
    directory = adapter_dir(store, step)
    if name not in ADAPTER_FILES or not (directory / name).is_file():
        raise NotFound(
            f"run {store.run_id!r} step {step}: the adapter has no file {name[:200]!r} "
            f"(its files: {', '.join(n for n in ADAPTER_FILES if (directory / n).is_file())})",
            field="name",
        )
    return directory / name
