"""Whether a failed checkpoint write ran out of space: an `OSError` says so by its errno, but
`torch.save` reports a short write as a `RuntimeError` from its zip writer, safetensors raises its
own `SafetensorError` and the tokenizers library (tokenizer.json) a plain `Exception`, all of them
carrying the OS error (if at all) only in their text."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

# What torch's zip writer says when a write came up short (PytorchStreamWriter).
_TORCH_SHORT_WRITE = ("unexpected pos", "failed writing file")
# How an OS error shows in the text of writers that wrap it (safetensors' Rust io::Error, and others).
_NO_SPACE_TEXT = ("no space left on device", "disk quota exceeded", "os error 28", "os error 122")
# Below this much free space a failed write is taken for a full disk, whatever the checkpoint's size.
MIN_FREE_BYTES = 64 * 1024 * 1024


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _is_write_failure(error: BaseException) -> bool:
    """Errors a file writer raises: the OS's own, torch's short write, and safetensors' error type
    (matched by name: safetensors does not export it from a stable place)."""
    if isinstance(error, OSError) or type(error).__name__ == "SafetensorError":
        return True
    return isinstance(error, RuntimeError) and any(s in str(error) for s in _TORCH_SHORT_WRITE)


def out_of_space(error: BaseException, state_dir: Path, last_checkpoint: Path | None) -> bool:
    """True for ENOSPC / EDQUOT, for an error whose text names either, and for any other failed
    write when less space is free than the last checkpoint took (it failed for want of room)."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if any(s in str(error).lower() for s in _NO_SPACE_TEXT):
        return True
    if not _is_write_failure(error):
        return False
    needed = max(MIN_FREE_BYTES, _size(last_checkpoint) if last_checkpoint is not None else 0)
    return shutil.disk_usage(state_dir).free < needed
