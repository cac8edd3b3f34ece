"""Credit by turn over HTTP: a step whose samples carry their turns and the step's credit trains exactly
as the same step did when the orchestrator sent each turn's credited reward, and a step applied in the
old form replays when retried in the new one (an orchestrator upgraded mid-step)."""

import pytest
import torch
from conftest import tiny_run
from fastapi.testclient import TestClient
from test_turn_credit_golden import CASES, _raw_samples


@pytest.fixture
def client(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token="")) as c:
        yield c


def _new_form(credit):
    return {"step": 1, "samples": [s.model_dump(mode="json") for s in _raw_samples()], "credit": credit}


def _old_form(case):
    """The step as the orchestrator sent it before: each turn's credited reward, no turns, no credit."""
    samples = []
    for s, reward, trajectory in zip(_raw_samples(), case["rewards"], case["trajectories"], strict=True):
        sample = s.model_dump(mode="json", exclude={"turn", "completion_ids", "completion_logprobs", "policy_version"})
        samples.append({**sample, "reward": reward, "trajectory": trajectory})
    return {"step": 1, "samples": samples}


def _params(engine, run_id):
    m = engine.acc.unwrap_model(engine.loaded[run_id].policy)
    return {k: v.detach().clone() for k, v in m.named_parameters() if v.requires_grad}


@pytest.mark.parametrize("mode", ["turn", "mixed"])
def test_turns_credited_by_the_trainer_train_as_credited_rewards_did(client, engine, mode):
    case = next(c for c in CASES if c["credit"]["mode"] == mode)
    for run_id in ("old", "new"):
        assert client.post("/v1/runs", json=tiny_run(run_id, lora={"r": 4})).status_code == 201
    old = client.post("/v1/runs/old/steps", json=_old_form(case))
    new = client.post("/v1/runs/new/steps", json=_new_form(case["credit"]))
    assert old.status_code == 200 and new.status_code == 200, (old.text, new.text)
    old_metrics, new_metrics = old.json()["metrics"], new.json()["metrics"]
    old_metrics.pop("seconds"), new_metrics.pop("seconds")
    assert new_metrics == old_metrics
    assert new_metrics["reward_mean"] == pytest.approx(sum(case["rewards"]) / len(case["rewards"]), abs=1e-6)
    before, after = _params(engine, "old"), _params(engine, "new")
    assert all(torch.equal(before[k], after[k]) for k in before)
    # retried in the new form, the step applied in the old form is the same step
    retried = client.post("/v1/runs/old/steps", json=_new_form(case["credit"]))
    assert retried.status_code == 200 and retried.json()["replayed"] is True
    # other credit settings are other samples
    other = client.post("/v1/runs/old/steps", json=_new_form({**case["credit"], "weight": 0.1, "mode": "mixed"}))
    assert other.status_code == 409 and "different samples" in other.json()["error"]["message"]


def test_credit_by_turn_refuses_samples_it_cannot_credit(client):
    client.post("/v1/runs", json=tiny_run("bad"))
    body = _new_form({"mode": "turn"})
    del body["samples"][2]["turn"]
    r = client.post("/v1/runs/bad/steps", json=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "samples.2.turn", r.text
    body = _new_form({"mode": "turn"})
    body["samples"][1]["turn"]["index"] = 5
    r = client.post("/v1/runs/bad/steps", json=body)
    assert r.status_code == 422 and "numbered [0, 2, 5], not 0 to 2" in r.json()["error"]["message"], r.text
    # final credit needs no turns: the rewards are the dialogues'
    body = _new_form({"mode": "final"})
    for s in body["samples"]:
        del s["turn"]
    assert client.post("/v1/runs/bad/steps", json=body).status_code == 200
