"""HTTP contract (in-process FastAPI app): create/get runs, exactly-once steps, errors, sampling."""

import json

import pytest
import torch
from conftest import P, fixed_samples, policy_tensors, tiny_run
from fastapi.testclient import TestClient


@pytest.fixture
def client(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token="")) as c:
        yield c


def _params(engine, run_id):
    m = engine.acc.unwrap_model(engine.loaded[run_id].policy)
    return {k: v.detach().clone() for k, v in m.named_parameters() if v.requires_grad}


def test_health_and_openapi(client):
    assert client.get("/health").status_code == 200
    spec = client.get("/openapi.json").json()
    assert "/v1/runs/{run_id}/steps" in spec["paths"] and "/v1/chat/completions" in spec["paths"]


def test_create_idempotent_and_conflict(client):
    r = client.post("/v1/runs", json=tiny_run("a"))
    assert r.status_code == 201 and r.json()["run_id"] == "a" and r.json()["step"] == 0
    r = client.post("/v1/runs", json=tiny_run("a"))
    assert r.status_code == 200 and r.json()["step"] == 0
    r = client.post("/v1/runs", json=tiny_run("a", learning_rate=0.5, algorithm="ppo"))
    assert r.status_code == 409
    err = r.json()["error"]
    assert "algorithm" in err["message"] and "hyperparameters.learning_rate" in err["message"]
    assert err["differing_keys"] == ["algorithm", "hyperparameters.learning_rate"]
    g = client.get("/v1/runs/a").json()
    assert g["step"] == 0 and g["algorithm"] == "grpo" and g["checkpoints"][0]["step"] == 0


def test_recreate_that_changes_only_storage_settings_adopts_them(client):
    """A run created before snapshot_every/export_keep existed, or by a config that now publishes to vLLM,
    is re-created with them: it goes on under them (no 409), and its training settings still conflict."""
    r = client.post("/v1/runs", json=tiny_run("s"))
    assert r.status_code == 201
    r = client.post("/v1/runs", json=tiny_run("s", snapshot_every=5, export_keep=2))
    assert r.status_code == 200, r.json()
    run_json = client.get("/v1/runs/s").json()
    assert run_json["step"] == 0
    r = client.post("/v1/runs", json=tiny_run("s", snapshot_every=5, export_keep=2))
    assert r.status_code == 200, "the adopted settings are the run's now"
    r = client.post("/v1/runs", json=tiny_run("s", snapshot_every=5, export_keep=2, learning_rate=0.5))
    assert r.status_code == 409
    assert r.json()["error"]["differing_keys"] == ["hyperparameters.learning_rate"]


def test_errors_name_the_problem(client):
    r = client.get("/v1/runs/nope")
    assert r.status_code == 404 and "nope" in r.json()["error"]["message"]
    r = client.post("/v1/runs/nope/steps", json={"step": 1, "samples": fixed_samples(1)})
    assert r.status_code == 404 and "nope" in r.json()["error"]["message"]
    client.post("/v1/runs", json=tiny_run("e"))
    bad = fixed_samples(1)
    bad[1]["reward"] = "lots"
    r = client.post("/v1/runs/e/steps", json={"step": 1, "samples": bad})
    assert r.status_code == 422 and r.json()["error"]["field"] == "samples.1.reward"
    r = client.post("/v1/runs/e/steps", json={"samples": fixed_samples(1)})
    assert r.status_code == 422 and r.json()["error"]["field"] == "step"
    r = client.post("/v1/runs/e/steps", json={"step": 1, "samples": []})
    assert r.status_code == 422 and r.json()["error"]["field"] == "samples"
    body = tiny_run("x")
    body["hyperparameters"]["learnin_rate"] = 1
    r = client.post("/v1/runs", json=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "hyperparameters.learnin_rate"
    r = client.post("/v1/runs", json={**tiny_run("x"), "algorithm": "dpo"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "algorithm"
    r = client.post("/v1/runs", json={**tiny_run("x"), "base_model": "/no/such/model"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "base_model"
    r = client.post("/v1/runs", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "body" and "JSON" in r.json()["error"]["message"]
    r = client.post("/v1/runs", json={**tiny_run("bad@id")})
    assert r.status_code == 422 and r.json()["error"]["field"] == "run_id"
    r = client.post("/v1/runs/e/steps", json={"step": 2, "samples": fixed_samples(2)})
    assert r.status_code == 409
    assert r.json()["error"]["expected_step"] == 1 and "expected step 1" in r.json()["error"]["message"]
    r = client.post("/v1/chat/completions", json={"model": "ghost", "messages": P})
    assert r.status_code == 404 and "ghost" in r.json()["error"]["message"]
    r = client.post("/v1/chat/completions", json={"model": "e@7", "messages": P})
    assert r.status_code == 404 and "step 7" in r.json()["error"]["message"]
    r = client.post("/v1/chat/completions", json={"model": "e", "messages": []})
    assert r.status_code == 422 and r.json()["error"]["field"] == "messages"


def test_step_exactly_once(client, engine):
    client.post("/v1/runs", json=tiny_run("s", lora={"r": 4}))
    before = _params(engine, "s")
    r1 = client.post("/v1/runs/s/steps", json={"step": 1, "samples": fixed_samples(1)})
    assert r1.status_code == 200, r1.text
    b1 = r1.json()
    assert b1["step"] == 1 and b1["replayed"] is False
    # the commit-to-answer time, on the trainer's clock: measured, short, never negative
    assert isinstance(b1["commit_to_answer_ms"], float) and 0 <= b1["commit_to_answer_ms"] < 5000
    for k in (
        "loss",
        "policy_loss",
        "value_loss",
        "kl",
        "entropy",
        "clip_fraction",
        "grad_norm",
        "reward_mean",
        "advantage_mean",
        "tokens",
        "seconds",
    ):
        assert isinstance(b1["metrics"][k], (int, float)), k
    after1 = _params(engine, "s")
    assert any(not torch.equal(before[k], after1[k]) for k in before)
    ck = policy_tensors(engine.state_dir, "s", 1)
    r2 = client.post("/v1/runs/s/steps", json={"step": 1, "samples": fixed_samples(1)})
    assert r2.status_code == 200 and r2.json()["replayed"] is True
    assert r2.json()["commit_to_answer_ms"] is None, "the stored result was committed by the first post"
    assert r2.json()["metrics"] == b1["metrics"]
    after2 = _params(engine, "s")
    assert all(torch.equal(after1[k], after2[k]) for k in after1)
    ck2 = policy_tensors(engine.state_dir, "s", 1)
    assert all(torch.equal(ck[k], ck2[k]) for k in ck)
    assert client.get("/v1/runs/s").json()["step"] == 1
    # same step number, different samples: refused, nothing changes
    r3 = client.post("/v1/runs/s/steps", json={"step": 1, "samples": fixed_samples(5)})
    assert r3.status_code == 409 and "different samples" in r3.json()["error"]["message"]
    assert client.get("/v1/runs/s/steps/1").json()["metrics"] == b1["metrics"]


def test_grpo_degenerate_groups_do_not_move_weights(client, engine):
    client.post("/v1/runs", json=tiny_run("z"))
    before = _params(engine, "z")
    samples = [
        {"prompt": P, "completion": "alone", "reward": 0.9, "group": "solo"},
        {"prompt": P, "completion": "a", "reward": 0.5, "group": "flat"},
        {"prompt": P, "completion": "b c", "reward": 0.5, "group": "flat"},
    ]
    r = client.post("/v1/runs/z/steps", json={"step": 1, "samples": samples})
    assert r.status_code == 200
    assert r.json()["metrics"]["advantage_mean"] == 0.0 and r.json()["metrics"]["grad_norm"] == 0.0
    after = _params(engine, "z")
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_chat_completions_openai_shape_seed_stop(client):
    client.post("/v1/runs", json=tiny_run("c"))
    body = {"model": "c", "messages": P, "max_tokens": 12, "temperature": 1.0, "seed": 11, "n": 2}
    r = client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200
    j = r.json()
    assert j["object"] == "chat.completion" and j["id"].startswith("chatcmpl-") and isinstance(j["created"], int)
    assert j["model"] == "c" and len(j["choices"]) == 2
    for i, ch in enumerate(j["choices"]):
        assert ch["index"] == i and ch["message"]["role"] == "assistant" and isinstance(ch["message"]["content"], str)
        assert ch["finish_reason"] in ("stop", "length")
    u = j["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] and u["completion_tokens"] <= 24
    again = client.post("/v1/chat/completions", json=body).json()
    assert [c["message"]["content"] for c in again["choices"]] == [c["message"]["content"] for c in j["choices"]]
    greedy = {"model": "c", "messages": P, "max_tokens": 5, "temperature": 0}
    g1 = client.post("/v1/chat/completions", json=greedy).json()
    assert g1["choices"][0]["finish_reason"] == "length" and g1["usage"]["completion_tokens"] == 5
    text = g1["choices"][0]["message"]["content"]
    stop = text.strip()[:2]
    g2 = client.post("/v1/chat/completions", json={**greedy, "stop": [stop]}).json()
    assert g2["choices"][0]["finish_reason"] == "stop" and stop not in g2["choices"][0]["message"]["content"]
    # content as a list of parts (OpenAI format) and unknown extra fields are accepted
    r = client.post(
        "/v1/chat/completions",
        json={
            "model": "c",
            "max_tokens": 2,
            "user": "x",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
        },
    )
    assert r.status_code == 200
    r = client.post("/v1/chat/completions", json={**greedy, "stream": True})
    assert r.status_code == 422 and r.json()["error"]["field"] == "stream"


def test_models_and_checkpoint_sampling(client):
    client.post("/v1/runs", json=tiny_run("m"))
    client.post("/v1/runs/m/steps", json={"step": 1, "samples": fixed_samples(1)})
    ids = [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert {"m", "m@0", "m@1"} <= set(ids)
    body = {"messages": P, "max_tokens": 6, "temperature": 0}
    cur = client.post("/v1/chat/completions", json={**body, "model": "m"}).json()
    at1 = client.post("/v1/chat/completions", json={**body, "model": "m@1"}).json()
    at0 = client.post("/v1/chat/completions", json={**body, "model": "m@0"}).json()
    assert at1["model"] == "m@1" and at0["model"] == "m@0"
    assert cur["choices"][0]["message"]["content"] == at1["choices"][0]["message"]["content"]


def test_auth(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token="s3cret")) as c:
        # liveness needs no token and says nothing else
        health = c.get("/health")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        assert c.get("/v1/status").status_code == 401
        r = c.get("/v1/models", headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        assert c.get("/v1/models", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_exports_load_in_peft_and_transformers(client, engine, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    client.post("/v1/runs", json=tiny_run("lo", lora={"r": 4, "alpha": 8}))
    r = client.post("/v1/runs/lo/steps", json={"step": 1, "samples": fixed_samples(1)}).json()
    exp = r["checkpoint"]["export_path"]
    assert r["checkpoint"]["export_format"] == "peft_lora"
    cfg = json.load(open(f"{exp}/adapter_config.json"))
    assert cfg["r"] == 4 and cfg["peft_type"] == "LORA" and not cfg.get("modules_to_save")
    lr = engine.loaded["lo"]
    base = AutoModelForCausalLM.from_pretrained(str(lr.base_path))
    m = PeftModel.from_pretrained(base, exp)
    ids = torch.tensor([[1, 5, 9, 200]])
    with torch.no_grad():
        want = engine.acc.unwrap_model(lr.policy)(input_ids=ids).logits
        got = m(input_ids=ids).logits
    assert torch.allclose(want, got, atol=1e-5)

    client.post("/v1/runs", json=tiny_run("full", export_keep=2))  # what a vLLM publish asks for
    r = client.post("/v1/runs/full/steps", json={"step": 1, "samples": fixed_samples(1)}).json()
    assert r["checkpoint"]["export_format"] == "hf_full"
    full = AutoModelForCausalLM.from_pretrained(r["checkpoint"]["export_path"])
    live = engine.acc.unwrap_model(engine.loaded["full"].policy)
    for (k, a), (_, b) in zip(sorted(full.state_dict().items()), sorted(live.state_dict().items()), strict=True):
        assert torch.equal(a, b), k
    run = client.get("/v1/runs/full").json()
    assert [c["step"] for c in run["checkpoints"]] == [0, 1]
    assert run["checkpoints"][1]["export_path"] == r["checkpoint"]["export_path"]


def test_ppo_step_and_metrics(client):
    client.post(
        "/v1/runs", json=tiny_run("p", algorithm="ppo", kl_coef=0.1, entropy_coef=0.01, mini_batch_size=3, ppo_epochs=2)
    )
    r = client.post("/v1/runs/p/steps", json={"step": 1, "samples": fixed_samples(1)})
    assert r.status_code == 200
    m = r.json()["metrics"]
    assert m["value_loss"] > 0 and m["updates"] == 4 and m["kl"] >= 0 and m["entropy"] > 0
    r = client.post("/v1/runs/p/steps", json={"step": 2, "samples": fixed_samples(2)})
    assert r.json()["metrics"]["kl"] > 0  # the policy has moved away from the reference


def test_step_hyperparameter_overrides_and_trajectories(client, engine):
    """An operator's live change (`attune set`) arrives with the step; unknown or invalid keys are refused."""
    client.post("/v1/runs", json=tiny_run("o"))
    samples = [dict(s, trajectory=f"d{i // 2}") for i, s in enumerate(fixed_samples(1))]
    bad = client.post("/v1/runs/o/steps", json={"step": 1, "samples": samples, "hyperparameters": {"base_model": "x"}})
    assert bad.status_code == 422 and "base_model" in bad.text
    bad = client.post("/v1/runs/o/steps", json={"step": 1, "samples": samples, "hyperparameters": {"clip_ratio": 3}})
    assert bad.status_code == 422 and "clip_ratio" in bad.text
    before = _params(engine, "o")
    # A learning rate of ~0 leaves the weights (almost) where they were; the run's own rate would move them.
    r = client.post(
        "/v1/runs/o/steps", json={"step": 1, "samples": samples, "hyperparameters": {"learning_rate": 1e-30}}
    )
    assert r.status_code == 200, r.text
    after = _params(engine, "o")
    assert all(torch.allclose(before[k], after[k], atol=1e-20) for k in before)
    assert client.get("/v1/runs/o").json()["step"] == 1
