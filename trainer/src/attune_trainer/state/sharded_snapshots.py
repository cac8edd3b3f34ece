"""Full-weight snapshots as `torch.distributed.checkpoint` (DCP) folders: each rank writes its own shard.

A full-weight snapshot holds the policy and its AdamW states (and PPO's critic with its own), as
sharded state dicts: under FSDP each rank holds and writes its shard of every tensor, under DDP DCP
spreads the replicated tensors over the ranks' files, and no rank gathers the full state. One process
without a process group writes one shard. The folder is

    __<rank>_0.distcp   each rank's shard (written and fsynced by that rank)
    .metadata           what is where, written by rank 0 once every rank's shard is durable
    state.json          the snapshot's marker (`snapshots.py`), written last, then the folder is renamed

A folder is loadable only when its `.metadata` reads and every shard it names is there, at least as
long as what it says is in it (`shards_complete`). The `.metadata` is a pickle: it is read with an
unpickler that only builds DCP's own metadata classes, never anything a planted file names.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.metadata import StorageMeta, TensorStorageMetadata
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict

from attune_trainer.compute import inner_optimizer
from attune_trainer.state.loaded_run import LoadedRun

METADATA = ".metadata"
FORMAT = "dcp"  # the snapshot's `format` in its marker; old-format snapshots have none

# What a DCP `.metadata` pickle may build: DCP's metadata records, torch sizes, dtypes and layouts.
_METADATA_CLASSES = {
    "torch.distributed.checkpoint.metadata": {
        "Metadata",
        "MetadataIndex",
        "StorageMeta",
        "TensorProperties",
        "TensorStorageMetadata",
        "BytesStorageMetadata",
        "ChunkStorageMetadata",
        "_MEM_FORMAT_ENCODING",
    },
    "torch.distributed.checkpoint.filesystem": {"_StorageInfo"},
    "torch.serialization": {"_get_layout"},
    "torch": {"Size"},
    "pathlib": {"PosixPath", "PurePosixPath"},
    "collections": {"OrderedDict"},
}


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        allowed = name in _METADATA_CLASSES.get(module, ())
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            allowed = True
        if not allowed:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a DCP checkpoint's metadata")
        return super().find_class(module, name)


def read_metadata(folder: Path) -> Any:
    """The folder's DCP metadata, built only from DCP's own classes (a planted pickle is refused)."""
    with open(folder / METADATA, "rb") as f:
        return _MetadataUnpickler(f).load()


def is_sharded(folder: Path) -> bool:
    return (folder / METADATA).exists()


def shards_complete(folder: Path) -> bool:
    """The metadata reads, and every shard file it names holds at least the bytes it places there."""
    try:
        metadata = read_metadata(folder)
        ends: dict[str, int] = {}
        for info in metadata.storage_data.values():
            ends[info.relative_path] = max(ends.get(info.relative_path, 0), info.offset + info.length)
        return bool(ends) and all((folder / name).stat().st_size >= end for name, end in ends.items())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError):
        return False


def _parts(run: LoadedRun) -> list[tuple[str, Any, Any]]:
    parts = [("policy", run.policy, inner_optimizer(run.policy_opt))]
    if run.critic is not None:
        parts.append(("critic", run.critic, inner_optimizer(run.critic_opt)))
    return parts


def _sharded_state_dicts(model: Any, optimizer: Any) -> tuple[dict, dict]:
    return get_state_dict(model, [optimizer], options=StateDictOptions(full_state_dict=False))


def tied_names(model_sd: dict) -> dict[str, str]:
    """Names whose tensor is an earlier name's (tied weights, e.g. SmolLM2's embeddings and LM head),
    to the name they share it with: a snapshot holds each tensor once."""
    first: dict[tuple, str] = {}
    tied = {}
    for name, value in model_sd.items():
        local = value.to_local() if hasattr(value, "to_local") else value
        key = (local.untyped_storage().data_ptr(), local.storage_offset(), tuple(local.shape))
        if key in first:
            tied[name] = first[key]
        else:
            first[key] = name
    return tied


def training_state(run: LoadedRun) -> dict:
    """The run's sharded state dicts (policy, critic, their AdamW states), tied weights once: what a
    snapshot holds. A fresh optimizer's states are created (a zero step at lr 0), so that loading
    has tensors to fill."""
    state = {}
    for name, model, optimizer in _parts(run):
        model_sd, optim_sd = _sharded_state_dicts(model, optimizer)
        for tied in tied_names(model_sd):
            del model_sd[tied]
        state[name] = model_sd
        state[f"{name}_optim"] = optim_sd
    return state


def stage_to_cpu(value: Any) -> Any:
    """A CPU copy of a state dict (a DTensor keeps its layout, its local shard copied): the step that
    follows changes the live tensors while the copy is written."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: stage_to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(stage_to_cpu(v) for v in value)
    return value


def state_bytes(value: Any) -> int:
    """Bytes of the tensors a state dict holds, over all ranks (a DTensor counts its global shape)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()  # a DTensor's numel is its global one
    if isinstance(value, dict):
        return sum(state_bytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(state_bytes(v) for v in value)
    return 0


def _distributed() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def write_shards(state: dict, folder: Path, group: Any = None) -> None:
    """Each rank writes (and fsyncs) its own shard of `state` into `folder`; rank 0 writes `.metadata`
    once every rank's shard is written. Collective over `group` when there is a process group."""
    writer = dcp.FileSystemWriter(str(folder), single_file_per_rank=True, sync_files=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.distributed is disabled.*")
        try:
            dcp.save(state, storage_writer=writer, process_group=group, no_dist=not _distributed())
        except CheckpointException as e:  # a BaseException: as an Exception, the callers' handlers see it
            raise RuntimeError(f"writing the sharded snapshot {folder} failed: {e}") from None


class SafeFileSystemReader(dcp.FileSystemReader):
    """DCP's file reader, with the `.metadata` read by `read_metadata` (never a plain unpickle)."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
        metadata = read_metadata(Path(self.path))
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


def load_shards(run: LoadedRun, folder: Path) -> None:
    """Fill the run's prepared (wrapped, sharded) models and optimizers from a sharded snapshot.
    Collective: every rank reads the parts of the shards its own shard of each tensor needs."""
    state = training_state(run)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.distributed is disabled.*")
        try:
            dcp.load(state, storage_reader=SafeFileSystemReader(str(folder)), no_dist=not _distributed())
        except CheckpointException as e:  # a BaseException: as an Exception, the callers' handlers see it
            raise RuntimeError(f"loading the sharded snapshot {folder} failed: {e}") from None
    for name, model, optimizer in _parts(run):
        model_sd = state[name]
        for tied, kept in tied_names(_sharded_state_dicts(model, optimizer)[0]).items():
            model_sd[tied] = model_sd[kept]  # the same tensor, under both names
        set_state_dict(model, [optimizer], model_state_dict=model_sd, optim_state_dict=state[f"{name}_optim"])


def read_tensors(folder: Path, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor of a sharded snapshot whose flat name starts with `prefix`, whole, in one process,
    by its flat name (`policy.<param>`, `policy_optim.state.<param>.exp_avg`, ...): for tools, tests
    and a snapshot step's model directory made on demand, never on a training path."""
    metadata = read_metadata(folder)
    tensors = {
        name: torch.empty(meta.size, dtype=meta.properties.dtype)
        for name, meta in metadata.state_dict_metadata.items()
        if isinstance(meta, TensorStorageMetadata) and name.startswith(prefix)
    }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.distributed is disabled.*")
        try:
            dcp.load(tensors, storage_reader=SafeFileSystemReader(str(folder)), no_dist=True)
        except CheckpointException as e:
            raise RuntimeError(f"reading the sharded snapshot {folder} failed: {e}") from None
    return tensors
