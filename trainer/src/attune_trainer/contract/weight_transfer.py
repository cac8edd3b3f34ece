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


# How long a broadcast may take when the request does not say: below the orchestrator's own 600 s
# deadline on the call, so the trainer's answer, not a client-side abort, says what happened.
DEFAULT_SEND_TIMEOUT_S = 570.0


class WeightsSendRequest(BaseModel):
    """A step's broadcast, bounded by the publish's deadline: past `timeout_seconds` the trainer stops
    waiting for vLLM's workers (one died or hangs mid-transfer), tears the group down and answers 504."""

    model_config = ConfigDict(extra="forbid")

    timeout_seconds: float = Field(default=DEFAULT_SEND_TIMEOUT_S, ge=1, le=3600)
