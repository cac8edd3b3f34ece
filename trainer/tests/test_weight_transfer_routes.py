"""vLLM's native weight transfer, rank 0's side, with a recording sender in place of NCCL: joining the
group, a step's update_info read from its checkpoint (the same tensors, in the same order, as those
broadcast), a send before any join refused as a conflict, a receiver that stops mid-transfer (the send
fails at its deadline, the group torn down, the next publish goes through), and, on a host without
vLLM or CUDA, the real sender's typed 501."""

import threading
import time

import pytest
import torch
from conftest import fixed_samples, tiny_run
from fastapi.testclient import TestClient

from attune_trainer.contract.errors import WeightTransferNotJoined

TOKEN = "weight-transfer-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
GROUP = {"master_address": "10.0.0.5", "master_port": 29551, "world_size": 2}


class RecordingSender:
    """A `WeightSender` that records what it was asked to join and the tensors it would broadcast."""

    def __init__(self) -> None:
        self.groups: list[dict] = []
        self.sent: list[list[tuple[str, torch.Tensor]]] = []
        self.metadata: list[list] = []

    def join(self, group) -> None:
        self.groups.append(group.model_dump())

    def send(self, metadata, tensors) -> None:
        if not self.groups:
            raise WeightTransferNotJoined()
        self.metadata.append(metadata)
        self.sent.append(list(tensors()))

    def abort(self) -> None:
        self.groups.clear()


class StallingSender(RecordingSender):
    """Its receiver stops mid-transfer: the first send hands over one tensor, then blocks as a broadcast
    to a dead peer does inside NCCL, until `released` (at most 10 s, so a test without the bound fails
    rather than hangs). Aborting it tears the group down without unblocking that send."""

    def __init__(self) -> None:
        super().__init__()
        self.stalls = 1
        self.released = threading.Event()
        self.aborts = 0

    def send(self, metadata, tensors) -> None:
        if not self.stalls:
            return super().send(metadata, tensors)
        if not self.groups:
            raise WeightTransferNotJoined()
        self.stalls -= 1
        next(iter(tensors()))
        self.released.wait(10)
        raise RuntimeError("NCCL error: remote process exited")

    def abort(self) -> None:
        self.aborts += 1
        super().abort()


@pytest.fixture
def sender():
    return RecordingSender()


@pytest.fixture
def api(engine, sender):
    from attune_trainer.service.server import create_app

    engine.create_run(tiny_run("full", export_keep=2))  # what a vLLM publish asks for
    engine.apply_step("full", {"step": 1, "samples": fixed_samples(1)})
    with TestClient(create_app(engine, token=TOKEN, weight_sender=sender)) as c:
        yield c


def test_rank_0_joins_the_group_it_is_given(api, sender):
    r = api.post("/v1/weight-transfer/group", json=GROUP, headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json() == {"joined": True, "rank": 0, "world_size": 2}
    assert sender.groups == [GROUP]


def test_the_update_info_names_the_tensors_that_are_broadcast_in_their_order(api, sender, engine):
    info = api.get("/v1/runs/full/checkpoints/1/weight-transfer", headers=AUTH).json()
    assert info["run_id"] == "full" and info["step"] == 1 and len(info["names"]) > 3
    assert api.post("/v1/weight-transfer/group", json=GROUP, headers=AUTH).status_code == 200
    r = api.post("/v1/runs/full/checkpoints/1/weight-transfer", headers=AUTH)
    assert r.status_code == 200, r.text
    (sent,) = sender.sent
    assert [name for name, _ in sent] == info["names"]
    assert [str(t.dtype).removeprefix("torch.") for _, t in sent] == info["dtype_names"]
    assert [list(t.shape) for _, t in sent] == info["shapes"]
    assert r.json()["tensors"] == len(sent)
    assert r.json()["bytes"] == sum(t.numel() * t.element_size() for _, t in sent)
    # the step's own weights: the trainer's live policy after step 1
    live = dict(engine.compute.unwrap(engine.ensure_loaded("full").policy).state_dict())
    for name, tensor in sent:
        assert torch.equal(tensor, live[name].to(tensor.dtype)), name


def test_each_step_sends_its_own_weights(api, sender, engine):
    engine.apply_step("full", {"step": 2, "samples": fixed_samples(2)})
    api.post("/v1/weight-transfer/group", json=GROUP, headers=AUTH)
    for step in (1, 2):
        assert api.post(f"/v1/runs/full/checkpoints/{step}/weight-transfer", headers=AUTH).status_code == 200
    one, two = (dict(s) for s in sender.sent)
    assert any(not torch.equal(one[n], two[n]) for n in one)


def test_a_receiver_that_stops_mid_transfer_fails_the_send_at_its_deadline_and_the_next_publish_joins_afresh(engine):
    from attune_trainer.service.server import create_app

    engine.create_run(tiny_run("full", export_keep=2))
    engine.apply_step("full", {"step": 1, "samples": fixed_samples(1)})
    sender = StallingSender()
    send = "/v1/runs/full/checkpoints/1/weight-transfer"
    with TestClient(create_app(engine, token=TOKEN, weight_sender=sender)) as api:
        try:
            assert api.post("/v1/weight-transfer/group", json=GROUP, headers=AUTH).status_code == 200
            started = time.monotonic()
            r = api.post(send, json={"timeout_seconds": 1}, headers=AUTH)
            elapsed = time.monotonic() - started
            assert r.status_code == 504, r.text
            assert elapsed < 5, f"answered after {elapsed:.1f} s, past the 1 s deadline"
            error = r.json()["error"]
            assert error["type"] == "timeout_error"
            assert "the broadcast of full@1 did not finish within 1 s" in error["message"]
            assert "the next publish makes a new one" in error["message"]
            assert sender.aborts == 1
            # the group is torn down: a send without a new join is told to join
            assert api.post(send, headers=AUTH).status_code == 409
            # the lock is free while the first broadcast still hangs: the next publish joins and sends
            assert api.post("/v1/weight-transfer/group", json=GROUP, headers=AUTH).status_code == 200
            r = api.post(send, headers=AUTH)
            assert r.status_code == 200, r.text
            assert len(sender.sent) == 1 and r.json()["tensors"] == len(sender.sent[0])
        finally:
            sender.released.set()


def test_the_send_deadline_is_bounded(api):
    api.post("/v1/weight-transfer/group", json=GROUP, headers=AUTH)
    for bad in (0, 0.5, 3601, "soon"):
        r = api.post("/v1/runs/full/checkpoints/1/weight-transfer", json={"timeout_seconds": bad}, headers=AUTH)
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["error"]["field"] == "timeout_seconds"


def test_a_send_before_any_join_is_a_conflict_saying_to_join(api):
    r = api.post("/v1/runs/full/checkpoints/1/weight-transfer", headers=AUTH)
    assert r.status_code == 409, r.text
    assert "POST /v1/weight-transfer/group first" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/v1/runs/nope/checkpoints/1/weight-transfer", "run 'nope' not found"),
        ("/v1/runs/full/checkpoints/7/weight-transfer", "run 'full' has no checkpoint of step 7"),
    ],
)
def test_a_missing_run_or_step_is_a_404_that_says_which(api, path, says):
    for method in ("GET", "POST"):
        r = api.request(method, path, headers=AUTH)
        assert r.status_code == 404, r.text
        assert says in r.json()["error"]["message"]


def test_a_lora_run_has_no_full_weights_to_send(engine, sender):
    from attune_trainer.service.server import create_app

    engine.create_run(tiny_run("adapter", lora={"r": 4, "alpha": 8, "dropout": 0.0}))
    with TestClient(create_app(engine, token=TOKEN, weight_sender=sender)) as c:
        r = c.get("/v1/runs/adapter/checkpoints/0/weight-transfer", headers=AUTH)
    assert r.status_code == 404 and "has no full weights" in r.json()["error"]["message"]


def test_without_vllm_or_cuda_the_real_sender_answers_a_typed_501(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token=TOKEN)) as c:
        r = c.post("/v1/weight-transfer/group", json=GROUP, headers=AUTH)
    assert r.status_code == 501, r.text
    error = r.json()["error"]
    assert error["type"] == "unavailable_error"
    assert "NCCL weight transfer is not available on this trainer" in error["message"]
    assert "training.publish.transport: checkpoint" in error["message"]


def test_the_token_guards_the_routes(api):
    assert api.post("/v1/weight-transfer/group", json=GROUP).status_code == 401
    assert api.get("/v1/runs/full/checkpoints/1/weight-transfer").status_code == 401
