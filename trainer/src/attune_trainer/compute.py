"""Where the tensors live: device, precision and the ranks of a distributed launch.

One code path for CPU (fp32), one GPU (bf16 autocast, fp32 master weights) and many GPUs under
`accelerate launch` (FSDP/DDP): every rank executes the same engine operations in the same order
(rank 0 broadcasts them, see `dispatch.py`), and rank 0 writes the checkpoints.
"""

from __future__ import annotations

import hashlib
import os

import torch


class Compute:
    def __init__(self, device: str = "auto", dtype: str = "auto"):
        from accelerate import Accelerator

        want_cpu = device == "cpu" or (device == "auto" and not torch.cuda.is_available())
        if dtype == "auto":
            dtype = "fp32" if want_cpu else "bf16"
        if dtype not in ("fp32", "bf16"):
            raise ValueError("dtype must be auto, fp32 or bf16")
        self.dtype_name = dtype
        self.acc = Accelerator(cpu=want_cpu, mixed_precision="bf16" if dtype == "bf16" else "no")
        if want_cpu:
            _fsdp_on_cpu_ranks(self.acc)
        self.device = self.acc.device
        self.world = self.acc.num_processes
        self.rank = self.acc.process_index
        self.is_main = self.acc.is_main_process
        # frozen weights (LoRA base, reference) may live in bf16; trainable weights stay fp32
        self.frozen_dtype = torch.bfloat16 if dtype == "bf16" else torch.float32

    def all_reduce(self, t: torch.Tensor) -> torch.Tensor:
        if self.world > 1:
            import torch.distributed as dist

            t = t.to(self.device)
            dist.all_reduce(t)
        return t

    def barrier(self) -> None:
        if self.world > 1:
            self.acc.wait_for_everyone()

    def any_rank(self, flag: bool) -> bool:
        """True on every rank if `flag` is true on any rank. Collective (and so also a barrier)."""
        if self.world == 1:
            return flag
        return bool(self.all_reduce(torch.tensor([1.0 if flag else 0.0])).item() > 0)

    def broadcast_from_main(self, t: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        t = t.to(self.device)
        dist.broadcast(t, src=0)
        return t

    def unwrap(self, model):
        return self.acc.unwrap_model(model) if model is not None else None


def _fsdp_on_cpu_ranks(acc) -> None:
    """Under an FSDP launch on CPU ranks (gloo), shard with FSDP2 as on GPUs.

    accelerate turns CPU ranks into plain DDP and drops the FSDP plugin; torch's FSDP2 itself runs on
    gloo, so the multi-GPU code path (sharded update, gathered checkpoints) can be checked on CPU.
    """
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

    fsdp_launch = os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"
    if not fsdp_launch or acc.distributed_type != DistributedType.MULTI_CPU:
        return
    # both singletons: accelerate re-reads the process state into AcceleratorState on every instantiation
    PartialState._shared_state["distributed_type"] = DistributedType.FSDP
    acc.state.distributed_type = DistributedType.FSDP
    acc.state.fsdp_plugin = FullyShardedDataParallelPlugin()
    if not acc.is_fsdp2:
        raise RuntimeError(f"an FSDP launch on CPU ranks runs as {acc.distributed_type}, not FSDP2: check accelerate")


def inner_optimizer(opt):
    """The torch optimizer inside accelerate's wrapper (its param_groups and state)."""
    return getattr(opt, "optimizer", opt)


def seed_for(*parts: int | str) -> int:
    """A stable 63-bit seed from the run's seed and a purpose (e.g. `seed, "step", 3`)."""
    h = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "little") % (2**63 - 1)


def step_seeds(run_seed: int, step: int) -> dict[str, int]:
    """Every seed a step's update draws from: the torch RNG (dropout) and the mini-batch shuffle.
    Reseeded per step, so a replayed step needs these and no RNG state from before it."""
    return {"torch": seed_for(run_seed, "step", step), "shuffle": seed_for(run_seed, "shuffle", step)}
