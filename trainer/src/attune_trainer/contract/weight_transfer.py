"""The contract of NCCL weight transfer to vLLM: the group rank 0 joins, and what a step sends."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class WeightTransferGroup(BaseModel):
    """The NCCL group of the trainer's rank 0 (rank 0, the sender) and a vLLM server's workers.

    Rank 0 hosts the rendezvous (a TCP store) at `master_address:master_port`: the vLLM hosts must
    reach that port. `world_size` counts rank 0 and every vLLM worker (tensor x pipeline x data parallel).
    """

    model_config = ConfigDict(extra="forbid")

    master_address: str = Field(min_length=1, max_length=253)
    master_port: int = Field(ge=1, le=65535)
    world_size: int = Field(ge=2, le=4096)


class TensorMeta(BaseModel):
    """One tensor a step sends: its checkpoint name, torch dtype name and shape, as vLLM's
    `/update_weights` takes them (`names`, `dtype_names`, `shapes`)."""

    name: str
    dtype_name: str
    shape: list[int]
