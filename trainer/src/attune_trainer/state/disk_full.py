"""Whether a failed checkpoint write ran out of space: an `OSError` says so by its errno, but
`torch.save` reports a short write as a `RuntimeError` from its zip writer, without one."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

# What torch's zip writer says when a write came up short (PytorchStreamWriter).
_TORCH_SHORT_WRITE = ("unexpected pos", "failed writing file")
# Below this much free space a short write is taken for a full disk, whatever the checkpoint's size.
MIN_FREE_BYTES = 64 * 1024 * 1024


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def out_of_space(error: BaseException, state_dir: Path, last_checkpoint: Path | None) -> bool:
    """True for ENOSPC / EDQUOT, and for torch's short write when less space is free than the last
    checkpoint took (the write failed for want of room, not for a bug)."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if not isinstance(error, RuntimeError) or not any(s in str(error) for s in _TORCH_SHORT_WRITE):
        return False
    needed = max(MIN_FREE_BYTES, _size(last_checkpoint) if last_checkpoint is not None else 0)
    return shutil.disk_usage(state_dir).free < needed
