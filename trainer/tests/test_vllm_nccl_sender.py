"""The real sender's use of vLLM's trainer-side API, with a recording stand-in for the `vllm` package
(vLLM is not installed in the trainer's environment, and NCCL needs GPUs): rank 0 joins as rank 0 of
the group it is given, with a client that leaves vLLM's routes to the orchestrator; each send hands
vLLM's engine a source whose metadata and tensors are the step's, in one order; a group made again
shuts the old one down; a failed broadcast leaves no group to send in; a broadcast stuck on a receiver
that stopped is aborted at its deadline, and its late failure leaves the group joined after it alone."""

import sys
import threading
import time
import types
from dataclasses import dataclass

import pytest
import torch

from attune_trainer.contract.errors import WeightTransferNotJoined, WeightTransferUnavailable
from attune_trainer.contract.weight_transfer import TensorMeta, WeightTransferGroup
from attune_trainer.transfer.sender import VllmNcclSender, send_within

GROUP = WeightTransferGroup(master_address="10.0.0.5", master_port=29551, world_size=3)


@dataclass(frozen=True)
class ParamMeta:
    name: str
    dtype: torch.dtype
    shape: tuple


class RecordingEngine:
    def __init__(self, info, client, source):
        self.info, self.client, self.source = info, client, source
        self.sends: list[tuple[list, list]] = []
        self.shut = False
        self.fail = False
        # a receiver that stopped mid-transfer: the broadcast blocks until `unblocked` (NCCL: until the
        # communicator is aborted, or NCCL's own timeout), then fails; `ended` once it has
        self.hang = False
        self.unblocked = threading.Event()
        self.ended = threading.Event()

    def send_weights(self):
        # as vLLM's NCCL trainer engine: the client's four calls, the source's metadata, then its tensors
        self.client.start_weight_update()
        self.client.update_weights({})
        if self.hang:
            next(iter(self.source))
            self.unblocked.wait(10)
            self.ended.set()
            raise RuntimeError("NCCL error: communicator aborted")
        if self.fail:
            raise RuntimeError("NCCL error: remote process exited")
        self.sends.append((self.source.metadata(), list(self.source)))
        self.client.finish_weight_update()

    def shutdown(self):
        self.shut = True


@pytest.fixture
def vllm(monkeypatch):
    engines: list[RecordingEngine] = []

    class WeightTransferTrainerFactory:
        @classmethod
        def trainer_init(cls, init_info, *, client, source=None):
            engines.append(RecordingEngine(init_info, client, source))
            return engines[-1]

    @dataclass
    class NCCLTrainerInitInfo:
        master_address: str
        master_port: int
        world_size: int
        rank: int

    api = types.ModuleType("vllm.distributed.weight_transfer")
    api.ParamMeta, api.WeightSource, api.WeightTransferTrainerFactory = ParamMeta, object, WeightTransferTrainerFactory
    nccl = types.ModuleType("vllm.distributed.weight_transfer.nccl_engine")
    nccl.NCCLTrainerInitInfo = NCCLTrainerInitInfo
    for name, module in [
        ("vllm", types.ModuleType("vllm")),
        ("vllm.distributed", types.ModuleType("vllm.distributed")),
        ("vllm.distributed.weight_transfer", api),
        ("vllm.distributed.weight_transfer.nccl_engine", nccl),
    ]:
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    return engines


TENSORS = [("model.embed_tokens.weight", torch.ones(4, 2, dtype=torch.bfloat16)), ("model.norm.weight", torch.zeros(2))]
META = [TensorMeta(name=n, dtype_name=str(t.dtype).removeprefix("torch."), shape=list(t.shape)) for n, t in TENSORS]


def test_rank_0_joins_the_group_with_a_client_that_leaves_vllms_routes_to_the_orchestrator(vllm):
    VllmNcclSender().join(GROUP)
    (engine,) = vllm
    assert (engine.info.master_address, engine.info.master_port, engine.info.world_size, engine.info.rank) == (
        "10.0.0.5",
        29551,
        3,
        0,
    )
    for call in ("init_weight_transfer_engine", "start_weight_update", "update_weights", "finish_weight_update"):
        assert (
            getattr(engine.client, call)(*([{}] if call in ("init_weight_transfer_engine", "update_weights") else []))
            is None
        )


def test_each_send_hands_vllm_the_steps_metadata_and_tensors_in_one_order(vllm):
    sender = VllmNcclSender()
    sender.join(GROUP)
    sender.send(META, lambda: iter(TENSORS))
    ((metadata, tensors),) = vllm[0].sends
    assert metadata == [ParamMeta(n, t.dtype, tuple(t.shape)) for n, t in TENSORS]
    assert [n for n, _ in tensors] == [n for n, _ in TENSORS]
    assert all(torch.equal(a, b) for (_, a), (_, b) in zip(tensors, TENSORS, strict=True))


def test_a_group_made_again_shuts_the_old_one_down(vllm):
    sender = VllmNcclSender()
    sender.join(GROUP)
    sender.join(GROUP)
    assert [e.shut for e in vllm] == [True, False]
    sender.send(META, lambda: iter(TENSORS))
    assert len(vllm[1].sends) == 1 and vllm[0].sends == []


def test_a_failed_broadcast_leaves_no_group_so_the_next_send_asks_to_join_again(vllm):
    sender = VllmNcclSender()
    sender.join(GROUP)
    vllm[0].fail = True
    with pytest.raises(RuntimeError, match="remote process exited"):
        sender.send(META, lambda: iter(TENSORS))
    assert vllm[0].shut
    with pytest.raises(WeightTransferNotJoined):
        sender.send(META, lambda: iter(TENSORS))


def test_without_cuda_joining_is_unavailable(vllm, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(WeightTransferUnavailable, match="no CUDA device"):
        VllmNcclSender().join(GROUP)
    assert vllm == []


def test_a_broadcast_stuck_on_a_stopped_receiver_is_aborted_at_its_deadline_and_the_next_group_is_left_alone(vllm):
    sender = VllmNcclSender()
    sender.join(GROUP)
    stuck = vllm[0]
    stuck.hang = True
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 0.5 s"):
        send_within(sender, META, lambda: iter(TENSORS), 0.5)
    assert time.monotonic() - started < 5
    assert stuck.shut, "the communicator is aborted (vLLM's shutdown: ncclCommAbort)"
    with pytest.raises(WeightTransferNotJoined):
        sender.send(META, lambda: iter(TENSORS))
    # the next publish joins a new group while the aborted broadcast has not returned yet ...
    sender.join(GROUP)
    stuck.unblocked.set()
    for thread in [t for t in threading.enumerate() if t.name == "weight-send"]:
        thread.join(5)  # the aborted send's thread, its failure handled
    assert stuck.ended.is_set()
    # ... and that broadcast's late failure does not close the new group
    assert not vllm[1].shut
    send_within(sender, META, lambda: iter(TENSORS), 5)
    assert len(vllm[1].sends) == 1


def test_a_send_that_fails_within_its_deadline_raises_its_own_error(vllm):
    sender = VllmNcclSender()
    sender.join(GROUP)
    vllm[0].fail = True
    with pytest.raises(RuntimeError, match="remote process exited"):
        send_within(sender, META, lambda: iter(TENSORS), 5)
    assert vllm[0].shut
