"""Rank 0's side of vLLM's native weight transfer (NCCL backend), through vLLM's trainer-side API
(`WeightTransferTrainerFactory`, the `nccl` engine) when vLLM is installed beside the trainer.

The orchestrator drives vLLM's own routes (`/init_weight_transfer_engine`, `/start_weight_update`,
`/update_weights`, `/finish_weight_update`) concurrently with these calls, so the client handed to
vLLM's trainer engine does nothing: it is the orchestrator that tells the workers to join and
to receive. vLLM is imported only when a group is joined: the trainer runs without it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import torch

from attune_trainer.contract.errors import WeightTransferNotJoined, WeightTransferUnavailable
from attune_trainer.contract.weight_transfer import TensorMeta, WeightTransferGroup

Tensors = Callable[[], Iterator[tuple[str, torch.Tensor]]]


class WeightSender(Protocol):
    """Joins rank 0 to a group with vLLM's workers, then broadcasts a step's tensors to them."""

    def join(self, group: WeightTransferGroup) -> None: ...

    def send(self, metadata: list[TensorMeta], tensors: Tensors) -> None: ...

    def abort(self) -> None:
        """Tears the group down from another thread while a send may be stuck in it; the next send
        needs a join. A stuck send returns or raises once its communicator is gone."""
        ...


def send_within(sender: WeightSender, metadata: list[TensorMeta], tensors: Tensors, timeout_s: float) -> None:
    """`sender.send`, bounded by `timeout_s`: raises TimeoutError past it, the group torn down.

    A broadcast whose receiver died mid-transfer blocks inside NCCL until NCCL's own timeout (minutes),
    and nothing in the call itself can stop sooner. So the send runs in a thread of its own, and past
    the deadline `sender.abort()` aborts the communicator (vLLM's shutdown: ncclCommAbort, which also
    unblocks the stuck broadcast) and the caller gets control back: the next publish joins afresh
    instead of waiting behind it. The thread ends when NCCL returns; it leaves a later group alone."""
    outcome: list[BaseException | None] = []

    def send() -> None:
        try:
            sender.send(metadata, tensors)
            outcome.append(None)
        except BaseException as e:  # handed to the caller's thread below
            outcome.append(e)

    thread = threading.Thread(target=send, name="weight-send", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        sender.abort()
        raise TimeoutError(f"the broadcast did not finish within {timeout_s:g} s")
    if outcome and outcome[0] is not None:
        raise outcome[0]


class _DrivenByTheOrchestrator:
    """vLLM's `VLLMWeightSyncClient` protocol, as no-ops: the orchestrator makes these calls to vLLM."""

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        pass

    def start_weight_update(self) -> None:
        pass

    def update_weights(self, update_info: Any) -> None:
        pass

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        pass


def _vllm_trainer_api():
    try:
        from vllm.distributed.weight_transfer import ParamMeta, WeightSource, WeightTransferTrainerFactory
        from vllm.distributed.weight_transfer.nccl_engine import NCCLTrainerInitInfo
    except ImportError as e:
        raise WeightTransferUnavailable(f"vLLM's trainer-side API cannot be imported ({e})") from e
    return ParamMeta, WeightSource, WeightTransferTrainerFactory, NCCLTrainerInitInfo


class VllmNcclSender:
    """The `WeightSender` of a GPU trainer: vLLM's NCCL trainer engine, its source switched per step."""

    def __init__(self) -> None:
        self._engine = None
        self._source = None

    def join(self, group: WeightTransferGroup) -> None:
        param_meta, weight_source, factory, init_info = _vllm_trainer_api()
        if not torch.cuda.is_available():
            raise WeightTransferUnavailable("no CUDA device")
        self.close()  # a group made again (vLLM restarted): the old one is of no use
        self._source = _step_source(weight_source, param_meta)
        info = init_info(
            master_address=group.master_address,
            master_port=group.master_port,
            world_size=group.world_size,
            rank=0,
        )
        self._engine = factory.trainer_init(info, client=_DrivenByTheOrchestrator(), source=self._source)

    def send(self, metadata: list[TensorMeta], tensors: Tensors) -> None:
        engine, source = self._engine, self._source
        if engine is None or source is None:
            raise WeightTransferNotJoined()
        source.metadata_rows, source.tensors = metadata, tensors
        try:
            engine.send_weights()
        except Exception:
            # vLLM: after a failed broadcast the group is unusable; join again. A send aborted past its
            # deadline ends here late: the group it was in is gone, and a newer one is not its to close.
            if self._engine is engine:
                self.close()
            raise

    def abort(self) -> None:
        self.close()

    def close(self) -> None:
        # taken out first: a send failing meanwhile in another thread sees no group to close again
        engine, self._engine, self._source = self._engine, None, None
        if engine is not None:
            engine.shutdown()


def _step_source(weight_source: type, param_meta: type):
    """A vLLM `WeightSource` whose metadata and tensors are set before each send."""

    class StepSource(weight_source):
        def __init__(self) -> None:
            self.metadata_rows: list[TensorMeta] = []
            self.tensors: Tensors = lambda: iter(())

        def metadata(self):
            return [param_meta(m.name, getattr(torch, m.dtype_name), tuple(m.shape)) for m in self.metadata_rows]

        def __iter__(self):
            return self.tensors()

    return StepSource()
