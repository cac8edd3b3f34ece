"""A committed full fine-tuning checkpoint's weights as files another host can fetch and check: what a
publisher beside a vLLM replica downloads before it asks vLLM to reload them in place.

The manifest has the adapter's shape (adapter_files.py): the model directory's files (name, size,
sha256) in name order and the digest over them. The directory is the one the checkpoint exports
(`checkpoints/step-N/policy`, or the base model for step 0); only its plain top-level files are
listed and served, never a path inside or outside it.

Hashing a 7B model reads about 15 GB, and every replica asks for the manifest at each publish and each
check before a step: each directory is hashed once (an export when it is written, any other directory
at its first request) and its file list is stored inside it as `.attune-weights-manifest.json` (a dot
name: never listed nor served). A stored list whose names, sizes or mtimes are not the directory's is
not trusted: the directory is hashed again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from attune_trainer.contract.errors import NotFound
from attune_trainer.log import log
from attune_trainer.state.adapter_files import adapter_digest, committed_export, file_sha256
from attune_trainer.state.store import RunStore, write_json_atomic

# A file name the manifest may carry: what the TypeScript side accepts too (src/trainer/adapterFiles.ts)
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Where a directory's hashed file list is kept; its leading dot keeps it out of the list itself
STORED_MANIFEST = ".attune-weights-manifest.json"


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


def _file_stats(directory: Path) -> list[dict]:
    """Name, size and mtime of each listed file: what a stored list must still match (no content read)."""
    stats = [(name, (directory / name).stat()) for name in weights_file_names(directory)]
    return [{"name": name, "size": st.st_size, "mtime_ns": st.st_mtime_ns} for name, st in stats]


def _stored_files(directory: Path, stats: list[dict]) -> list[dict] | None:
    """The stored file list when it describes the directory as it is now, else None."""
    try:
        stored = json.loads((directory / STORED_MANIFEST).read_text())["files"]
        same = [{k: f[k] for k in ("name", "size", "mtime_ns")} for f in stored] == stats
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [{"name": f["name"], "size": f["size"], "sha256": f["sha256"]} for f in stored] if same else None


def store_weights_manifest(directory: Path) -> list[dict]:
    """Hashes the directory's files and stores the list inside it (atomically: temp file, then rename).

    Called as an export is written, before it is committed; a directory that cannot be written (a
    read-only base model) is still served, hashed per request, and the log says why."""
    stats = _file_stats(directory)
    files = [{**f, "sha256": file_sha256(directory / f["name"])} for f in stats]
    try:
        write_json_atomic(directory / STORED_MANIFEST, {"files": files})
    except OSError as e:
        log("warning", "weights manifest not stored: it is hashed again per request", path=str(directory), error=str(e))
    return [{"name": f["name"], "size": f["size"], "sha256": f["sha256"]} for f in files]


def weights_manifest(store: RunStore, step: int) -> dict:
    """The model directory's files with their sizes and sha256, and the digest over them (stored once)."""
    directory = weights_dir(store, step)
    files = _stored_files(directory, _file_stats(directory))
    if files is None:
        files = store_weights_manifest(directory)
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
