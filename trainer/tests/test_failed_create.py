"""A run whose first load fails is refused at creation and leaves nothing on disk."""

import pytest
from conftest import fixed_samples, tiny_run
from fastapi.testclient import TestClient


@pytest.fixture
def client(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token="")) as c:
        yield c


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_missing_lora_target_modules_refused_and_nothing_left(client, engine, algorithm):
    bad = tiny_run("t", algorithm=algorithm, lora={"r": 4, "target_modules": ["no_such_proj", "nor_this"]})
    r = client.post("/v1/runs", json=bad)
    assert r.status_code in (400, 422), r.text
    err = r.json()["error"]
    assert "no_such_proj" in err["message"] and "nor_this" in err["message"]
    assert err["field"] == "lora.target_modules"
    assert not (engine.state_dir / "runs" / "t").exists()
    assert [p.name for p in (engine.state_dir / "runs").iterdir()] == []
    assert client.get("/v1/runs/t").status_code == 404
    # the same id with good settings is a new run that trains
    good = tiny_run("t", algorithm=algorithm, lora={"r": 4, "target_modules": ["q_proj"]})
    r = client.post("/v1/runs", json=good)
    assert r.status_code == 201, r.text
    assert client.post("/v1/runs/t/steps", json={"step": 1, "samples": fixed_samples(1)}).status_code == 200
