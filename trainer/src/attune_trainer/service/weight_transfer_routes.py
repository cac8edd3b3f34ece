"""Routes of vLLM's native weight transfer (NCCL backend), rank 0's side. The orchestrator calls
each beside the matching vLLM route, at the same time, since both sides meet inside NCCL:
`POST /v1/weight-transfer/group` with vLLM's `/init_weight_transfer_engine`, and
`POST .../checkpoints/{step}/weight-transfer` with vLLM's `/update_weights` (whose `update_info`
is what `GET` of that path answers). A send is bounded by the publish's deadline (`timeout_seconds`):
past it the group is torn down and the lock released, so a vLLM that died mid-transfer holds nothing up."""

from __future__ import annotations

import threading
import time

from fastapi import FastAPI

from attune_trainer.contract.errors import InvalidRunId, WeightTransferTimedOut
from attune_trainer.contract.schemas import valid_run_id
from attune_trainer.contract.weight_transfer import WeightsSendRequest, WeightTransferGroup
from attune_trainer.engine.engine import Engine
from attune_trainer.log import log
from attune_trainer.service.responses import StepTensors, WeightsSent, WeightTransferJoined, documented
from attune_trainer.transfer.sender import WeightSender, send_within
from attune_trainer.transfer.step_tensors import step_tensor_metadata, step_tensors


def add_weight_transfer_routes(app: FastAPI, engine: Engine, sender: WeightSender) -> None:
    # one group operation at a time: a send never overlaps a join or another send
    lock = threading.Lock()

    @app.post(
        "/v1/weight-transfer/group",
        summary="rank 0 joins an NCCL group with a vLLM server's workers (with vLLM's /init_weight_transfer_engine)",
        responses=documented(WeightTransferJoined),
    )
    def join_group(body: WeightTransferGroup):
        with lock:
            sender.join(body)
        log("info", "joined the weight-transfer group", address=body.master_address, world_size=body.world_size)
        return {"joined": True, "rank": 0, "world_size": body.world_size}

    @app.get(
        "/v1/runs/{run_id}/checkpoints/{step}/weight-transfer",
        summary="a full fine-tuning step's tensors (names, dtypes, shapes): the update_info of vLLM's /update_weights",
        responses=documented(StepTensors),
    )
    def step_update_info(run_id: str, step: int):
        metadata = step_tensor_metadata(_store(engine, run_id), step)
        return {
            "run_id": run_id,
            "step": step,
            "names": [m.name for m in metadata],
            "dtype_names": [m.dtype_name for m in metadata],
            "shapes": [m.shape for m in metadata],
        }

    @app.post(
        "/v1/runs/{run_id}/checkpoints/{step}/weight-transfer",
        summary="broadcast a full fine-tuning step's tensors to the group (with vLLM's /update_weights)",
        responses=documented(WeightsSent),
    )
    def send_step(run_id: str, step: int, body: WeightsSendRequest | None = None):
        store = _store(engine, run_id)
        metadata = step_tensor_metadata(store, step)
        timeout = (body or WeightsSendRequest()).timeout_seconds
        started = time.monotonic()
        with lock:
            # bounded: a receiver that died mid-transfer would hold the lock, and every later join and
            # send, until NCCL's own timeout
            try:
                send_within(sender, metadata, lambda: step_tensors(store, step, engine.device), timeout)
            except TimeoutError:
                log("warning", "weights not sent: the broadcast timed out", run_id=run_id, step=step, timeout=timeout)
                raise WeightTransferTimedOut(run_id, step, timeout) from None
        seconds = time.monotonic() - started
        size = sum(_numel(m.shape) * _itemsize(m.dtype_name) for m in metadata)
        log("info", "weights sent", run_id=run_id, step=step, tensors=len(metadata), bytes=size, seconds=seconds)
        return {"run_id": run_id, "step": step, "tensors": len(metadata), "bytes": size, "seconds": seconds}


def _store(engine: Engine, run_id: str):
    if not valid_run_id(run_id):
        raise InvalidRunId(run_id)
    return engine.run_store(run_id)


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _itemsize(dtype_name: str) -> int:
    import torch

    dtype = getattr(torch, dtype_name, None)
    return dtype.itemsize if isinstance(dtype, torch.dtype) else 0
