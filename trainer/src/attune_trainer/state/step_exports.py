"""A step's policy weights written for what reads them between snapshots, in the dtype served.

Written only when asked: each step when the run keeps exports (`export_keep`: a vLLM publish over the
checkpoint transport, a replica's download, sampling an older step within maxStaleness), or on
demand before a step changes weights that a reply in flight still samples. On a snapshot step whose
policy is already in the served dtype (fp32 on CPU, and any LoRA adapter) the snapshot's files are
hard-linked: nothing is written twice. Committed like a snapshot: temporary folder, fsync, marker
last, rename. Only the newest `export_keep` (at least one) are kept.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid

from attune_trainer.compute import Compute
from attune_trainer.log import log
from attune_trainer.state.checkpoints import link_tokenizer, patch_adapter_config, tree_bytes
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.step_weights import EXPORT_MARKER, export_path, export_steps, exports_dir
from attune_trainer.state.store import RunStore, fsync_dir, fsync_tree, readable_like_others, write_json_atomic
from attune_trainer.state.weights_files import store_weights_manifest


def links_snapshot(run: LoadedRun) -> bool:
    """Whether a snapshot's policy files are what an export would hold: a LoRA adapter (a full-weight
    snapshot is sharded, not a model directory)."""
    return run.lora is not None


class ExportWriter:
    def __init__(self, compute: Compute):
        self.compute = compute

    def write(self, run: LoadedRun, step: int, link_snapshot: bool = False) -> dict:
        """Export the live weights as step `step` (or link its snapshot's). Collective: every rank calls it.

        Returns `{"path", "format", "bytes", "seconds"}` (bytes 0 for a link)."""
        t0 = time.time()
        state_dict = None if link_snapshot else self._served_state_dict(run)
        out, error = {}, None
        if self.compute.is_main:
            try:
                out = self._commit(run, step, state_dict, link_snapshot)
            except Exception as e:  # noqa: BLE001 - re-raised below, after every rank has heard of it
                error = e
        failed = self.compute.any_rank(error is not None)
        if error is not None:
            raise error
        if failed:
            raise RuntimeError(f"rank 0 failed to export step {step} of run {run.run_id!r}")
        out["seconds"] = round(time.time() - t0, 4)
        return out

    def _served_state_dict(self, run: LoadedRun) -> dict | None:
        """The policy's full state dict on rank 0 (FSDP gathers it), cast to the served dtype."""
        sd = self.compute.acc.get_state_dict(run.policy)
        if sd is None or run.lora is not None:
            return sd
        dtype = self.compute.frozen_dtype
        return {k: v.to(dtype) if v.is_floating_point() else v for k, v in sd.items()}

    def _commit(self, run: LoadedRun, step: int, state_dict: dict | None, link_snapshot: bool) -> dict:
        store = run.store
        exports_dir(store).mkdir(parents=True, exist_ok=True)
        tmp = exports_dir(store) / f".tmp-{export_path(store, step).name}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        fmt = "peft_lora" if run.lora is not None else "hf_full"
        try:
            if link_snapshot:
                source = store.ckpt(step) / "policy"
                tmp.mkdir()
                for f in source.iterdir():
                    if f.is_file():
                        os.link(f, tmp / f.name)  # the snapshot's own files: no second write
            else:
                self._save(run, tmp, state_dict)
            written = 0 if link_snapshot else tree_bytes(tmp)
            dtype = "snapshot" if link_snapshot else str(self.compute.frozen_dtype).removeprefix("torch.")
            write_json_atomic(tmp / EXPORT_MARKER, {"step": step, "format": fmt, "dtype": dtype})
            if fmt == "hf_full" and not link_snapshot:
                store_weights_manifest(tmp)  # hashed once, while the files are fresh: replicas ask for it per publish
            readable_like_others(tmp)
            fsync_tree(tmp)
            final = export_path(store, step)
            if final.exists():  # a retried step that exported before it failed: the new one replaces it
                shutil.rmtree(final)
            os.replace(tmp, final)
            fsync_dir(exports_dir(store))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        retain_exports(store, run.hp.export_keep)
        log("info", "step exported", run_id=run.run_id, step=step, bytes=written, linked=link_snapshot)
        return {"path": str(final.resolve()), "format": fmt, "bytes": written}

    def _save(self, run: LoadedRun, tmp, state_dict: dict | None) -> None:
        unwrapped = self.compute.unwrap(run.policy)
        unwrapped.save_pretrained(str(tmp), state_dict=state_dict, safe_serialization=True)
        if run.lora is not None:
            patch_adapter_config(tmp, run.base_path)
        else:
            link_tokenizer(run.store.tokenizer_dir, tmp)
            config = json.loads((tmp / "config.json").read_text())
            config["torch_dtype"] = str(self.compute.frozen_dtype).removeprefix("torch.")
            (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))


def retain_exports(store: RunStore, keep: int) -> list[int]:
    """Remove all but the newest `max(keep, 1)` exports; returns the steps removed."""
    steps = export_steps(store)
    gone = steps[: -max(keep, 1)]
    for s in gone:
        shutil.rmtree(export_path(store, s), ignore_errors=True)
    return gone
