"""A committed full fine-tuning checkpoint's weights as files another host can fetch and check: what a
publisher beside a vLLM replica downloads before it asks vLLM to reload them in place.

The manifest has the adapter's shape (adapter_files.py): the model directory's files (name, size,
sha256) in name order and the digest over them. The directory is the one the checkpoint exports
(`checkpoints/step-N/policy`, or the base model for step 0); only its plain top-level files are
listed and served, never a path inside or outside it.
"""

from __future__ import annotations

import re
from pathlib import Path

from attune_trainer.contract.errors import NotFound
from attune_trainer.state.adapter_files import adapter_digest, committed_export, file_sha256
from attune_trainer.state.store import RunStore

# A file name the manifest may carry: what the TypeScript side accepts too (src/trainer/adapterFiles.ts)
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def weights_dir(store: RunStore, step: int) -> Path:
    """The model directory of `step`, or NotFound naming what is missing (run, step, or full weights)."""
    info = committed_export(store, step)
    if info.get("format") != "hf_full":
        raise NotFound(
            f"run {store.run_id!r} step {step} has no full weights: the run trains a LoRA adapter "
            "(fetch it from .../adapter)",
            field="step",
        )
    path = Path(info.get("path", ""))
    if not any(path.glob("*.safetensors")):
        raise NotFound(
            f"run {store.run_id!r} step {step}: the checkpoint's model directory has no safetensors", field="step"
        )
    return path


def weights_file_names(directory: Path) -> list[str]:
    """The directory's plain top-level files, in name order: what the manifest lists."""
    return sorted(p.name for p in directory.iterdir() if p.is_file() and _PLAIN_NAME.match(p.name))


def weights_manifest(store: RunStore, step: int) -> dict:
    """The model directory's files with their sizes and sha256, and the digest over them."""
    directory = weights_dir(store, step)
    files = [
        {"name": name, "size": (directory / name).stat().st_size, "sha256": file_sha256(directory / name)}
        for name in weights_file_names(directory)
    ]
    return {"run_id": store.run_id, "step": step, "format": "hf_full", "files": files, "digest": adapter_digest(files)}


def weights_file(store: RunStore, step: int, name: str) -> Path:
    """One file of the model directory, by its manifest name only (no other path is ever served)."""
    directory = weights_dir(store, step)
    names = weights_file_names(directory)
    if name not in names:
        raise NotFound(
            f"run {store.run_id!r} step {step}: the weights have no file {name[:200]!r} "
            f"(their files: {', '.join(names)})",
            field="name",
        )
    return directory / name
