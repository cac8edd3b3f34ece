"""Where a step's policy weights are on disk: its snapshot's policy directory, or its export.

Between snapshots a step's weights are on disk only as an export (`step_exports.py`), written when
a publish, a replica or sampling an older step needs them (`export_keep`); the run's current step is
also served from the live weights (`serving.py`). Everything that reads a step's weights (`run@k`,
the adapter and weights routes, the NCCL send, `attune export`) asks here, so a step without them is
refused in one way: naming the step and the nearest steps that have weights.

<run>/exports/step-000007/    the step's policy in the served dtype; `export.json` is written last,
                              then the folder is renamed into place (the rename commits it)
"""

from __future__ import annotations

import json
from pathlib import Path

from attune_trainer.contract.errors import NotFound
from attune_trainer.state.store import RunStore, step_name

EXPORT_MARKER = "export.json"


def exports_dir(store: RunStore) -> Path:
    return store.dir / "exports"


def export_path(store: RunStore, step: int) -> Path:
    return exports_dir(store) / step_name(step)


def export_steps(store: RunStore) -> list[int]:
    """Steps with a committed export (its marker is there)."""
    d = exports_dir(store)
    if not d.exists():
        return []
    out = []
    for p in d.iterdir():
        if p.name.startswith("step-") and (p / EXPORT_MARKER).exists():
            try:
                out.append(int(p.name[5:]))
            except ValueError:
                pass
    return sorted(out)


def snapshot_weights(store: RunStore, step: int) -> dict | None:
    """The export record of snapshot `step` when its policy directory is still there."""
    if step not in store.committed_steps():
        return None
    info = store.export_info(step) or {}
    return info if info.get("path") and Path(info["path"]).is_dir() else None


def step_weights(store: RunStore, step: int) -> dict | None:
    """`{"path", "format"}` of the step's policy weights on disk (export first: it is in the served
    dtype), or None when only a replay from the log could make them again."""
    d = export_path(store, step)
    marker = d / EXPORT_MARKER
    if marker.exists():
        exported = json.loads(marker.read_text())
        # An export linked to its snapshot is the same files: the snapshot's path stays the step's path,
        # so a replica that loads the step again loads it from where it did the first time.
        linked = snapshot_weights(store, step) if exported.get("dtype") == "snapshot" else None
        return linked or {"path": str(d.resolve()), "format": exported["format"]}
    return snapshot_weights(store, step)


def steps_with_weights(store: RunStore) -> list[int]:
    return sorted(set(export_steps(store)) | {s for s in store.committed_steps() if snapshot_weights(store, s)})


def nearest(steps: list[int], step: int) -> list[int]:
    """The closest step below and the closest above `step` among `steps` (those that exist)."""
    below = [s for s in steps if s < step]
    above = [s for s in steps if s > step]
    return ([below[-1]] if below else []) + ([above[0]] if above else [])


def no_weights(store: RunStore, step: int, field: str, current: int | None = None) -> NotFound:
    """The error for a step whose weights are on no disk: what it is and which steps to ask for instead."""
    have = steps_with_weights(store)
    near = nearest(have, step)
    live = f"; the current step {current} is served from the live weights" if current is not None else ""
    return NotFound(
        f"run {store.run_id!r} has no checkpoint of step {step}: no weights of it on disk (between snapshots, "
        "see snapshot_every, with no export kept, see export_keep; or pruned after keep_checkpoints); "
        f"nearest steps with weights: {', '.join(map(str, near)) or 'none'}{live}",
        field=field,
        step=step,
        nearest=near,
    )


def require_weights(store: RunStore, step: int, field: str = "step") -> dict:
    info = step_weights(store, step)
    if info is None:
        raise no_weights(store, step, field)
    return info
