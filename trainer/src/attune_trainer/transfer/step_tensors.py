"""A committed full fine-tuning step's tensors, read from its checkpoint's safetensors: their names,
dtypes and shapes (what vLLM's `/update_weights` is told to expect) and the tensors themselves, in
the same order, so the two never disagree. A retried or repeated send (a vLLM that restarted asks
for the version it is at) reads the same committed files, whatever the trainer has applied since."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import torch
from safetensors import safe_open

from attune_trainer.contract.weight_transfer import TensorMeta
from attune_trainer.state.store import RunStore
from attune_trainer.state.weights_files import weights_dir

# safetensors' dtype codes, as torch names them (vLLM does `getattr(torch, dtype_name)`)
_TORCH_DTYPE = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}


def _files(store: RunStore, step: int) -> list[Path]:
    return sorted(weights_dir(store, step).glob("*.safetensors"))


def step_tensor_metadata(store: RunStore, step: int) -> list[TensorMeta]:
    """Every tensor of the step's checkpoint, file by file in name order, keys in name order."""
    out: list[TensorMeta] = []
    for path in _files(store, step):
        with safe_open(str(path), framework="pt") as f:
            for name in sorted(f.keys()):
                part = f.get_slice(name)
                code = part.get_dtype()
                out.append(
                    TensorMeta(name=name, dtype_name=_TORCH_DTYPE.get(code, code.lower()), shape=part.get_shape())
                )
    return out


def step_tensors(store: RunStore, step: int, device: str | torch.device) -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors `step_tensor_metadata` lists, in its order, one at a time on `device`."""
    for path in _files(store, step):
        with safe_open(str(path), framework="pt", device=str(device)) as f:
            for name in sorted(f.keys()):
                yield name, f.get_tensor(name)
