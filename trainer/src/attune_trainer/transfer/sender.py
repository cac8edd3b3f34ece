"""Rank 0's side of vLLM's native weight transfer (NCCL backend), through vLLM's trainer-side API
(`WeightTransferTrainerFactory`, the `nccl` engine) when vLLM is installed beside the trainer.

The orchestrator drives vLLM's own routes (`/init_weight_transfer_engine`, `/start_weight_update`,
`/update_weights`, `/finish_weight_update`) concurrently with these calls, so the client handed to
vLLM's trainer engine does nothing: it is the orchestrator that tells the workers to join and
to receive. vLLM is imported only when a group is joined: the trainer runs without it."""

from __future__ import annotations

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
        if self._engine is None or self._source is None:
            raise WeightTransferNotJoined()
        self._source.metadata_rows, self._source.tensors = metadata, tensors
        try:
            self._engine.send_weights()
        except Exception:
            self.close()  # vLLM: after a failed broadcast the group is unusable; join again
            raise

    def close(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()
        self._engine = None
        self._source = None


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
