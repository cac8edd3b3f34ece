"""Live hyperparameter changes (step overrides): every value the schema accepts gives a step, never a 5xx."""

import pytest
from conftest import fixed_samples, tiny_run
from fastapi.testclient import TestClient

from attune_trainer.contract.schemas import StepOverrides


@pytest.fixture
def client(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token="")) as c:
        yield c


@pytest.mark.parametrize("lora", [None, {"r": 4}], ids=["full", "lora"])
def test_kl_coef_turned_on_live_gives_a_kl(client, engine, lora):
    assert client.post("/v1/runs", json=tiny_run("k", lora=lora, kl_coef=0.0)).status_code == 201
    first = client.post("/v1/runs/k/steps", json={"step": 1, "samples": fixed_samples(1)})
    assert first.status_code == 200, first.text
    r = client.post(
        "/v1/runs/k/steps", json={"step": 2, "samples": fixed_samples(2), "hyperparameters": {"kl_coef": 0.1}}
    )
    assert r.status_code == 200, r.text
    assert r.json()["metrics"]["kl"] > 0
    # a step without the override again: no KL term, and the run keeps training
    r = client.post("/v1/runs/k/steps", json={"step": 3, "samples": fixed_samples(3)})
    assert r.status_code == 200, r.text
    assert r.json()["metrics"]["kl"] == 0


def test_kl_reference_built_live_survives_a_reload(tmp_path):
    from attune_trainer.engine.engine import Engine
    from attune_trainer.service.server import create_app

    state = tmp_path / "state"
    first = Engine(state, device="cpu")
    with TestClient(create_app(first, token="")) as c:
        assert c.post("/v1/runs", json=tiny_run("k", kl_coef=0.0)).status_code == 201
        assert c.post("/v1/runs/k/steps", json={"step": 1, "samples": fixed_samples(1)}).status_code == 200
    first.state_lock.release()
    # a restarted trainer loads the run from disk (stored kl_coef 0); the step's override decides
    with TestClient(create_app(Engine(state, device="cpu"), token="")) as c:
        body = {"step": 2, "samples": fixed_samples(2), "hyperparameters": {"kl_coef": 0.5}}
        r = c.post("/v1/runs/k/steps", json=body)
        assert r.status_code == 200, r.text
        assert r.json()["metrics"]["kl"] > 0


# a valid value for each overridable field, other than its default
VALID = {
    "learning_rate": 0.5,
    "clip_ratio": 0.05,
    "kl_coef": 0.2,
    "entropy_coef": 0.01,
    "value_learning_rate": 0.5,
    "max_grad_norm": 0.1,
}


def test_the_table_covers_every_overridable_field():
    assert set(VALID) == set(StepOverrides.model_fields)
    for name, value in VALID.items():
        StepOverrides.model_validate({name: value})


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
@pytest.mark.parametrize("lora", [None, {"r": 4}], ids=["full", "lora"])
def test_every_override_gives_a_step(client, algorithm, lora):
    assert client.post("/v1/runs", json=tiny_run("o", algorithm=algorithm, lora=lora)).status_code == 201
    for step, (name, value) in enumerate(VALID.items(), start=1):
        body = {"step": step, "samples": fixed_samples(step), "hyperparameters": {name: value}}
        r = client.post("/v1/runs/o/steps", json=body)
        assert r.status_code == 200, f"{name}={value}: {r.status_code} {r.text}"
        assert r.json()["step"] == step
    everything = {"step": len(VALID) + 1, "samples": fixed_samples(9), "hyperparameters": VALID}
    r = client.post("/v1/runs/o/steps", json=everything)
    assert r.status_code == 200, r.text
