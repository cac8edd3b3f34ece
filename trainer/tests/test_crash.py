"""Crash and resume with a real service process killed by SIGKILL, between and during steps."""

import threading
import time

import httpx
import torch
from conftest import fixed_samples, policy_tensors, tiny_run

STEPS = 4
RUN_PPO = tiny_run("crash", algorithm="ppo", seed=5, snapshot_every=1)  # a snapshot a step (test_step_log: between)
RUN_LORA = tiny_run("crash", algorithm="grpo", lora={"r": 4}, kl_coef=0.05, seed=6)


def post_steps(url, run_id, steps):
    out = []
    for s in steps:
        r = httpx.post(f"{url}/v1/runs/{run_id}/steps", json={"step": s, "samples": fixed_samples(s)}, timeout=120)
        assert r.status_code == 200, r.text
        out.append(r.json())
    return out


def assert_same(a: dict, b: dict):
    assert a.keys() == b.keys() and a
    for k in a:
        assert torch.equal(a[k], b[k]), f"tensor {k} differs"


def reference(tmp_path, service_factory, run):
    d = tmp_path / "ref"
    svc = service_factory(d)
    assert httpx.post(f"{svc.url}/v1/runs", json=run, timeout=120).status_code == 201
    res = post_steps(svc.url, "crash", range(1, STEPS + 1))
    svc.stop()
    return policy_tensors(d, "crash", STEPS), res


def test_sigkill_between_steps_resumes_to_identical_weights(tmp_path, service_factory):
    ref, ref_res = reference(tmp_path, service_factory, RUN_PPO)
    d = tmp_path / "crashy"
    svc = service_factory(d)
    assert httpx.post(f"{svc.url}/v1/runs", json=RUN_PPO, timeout=120).status_code == 201
    post_steps(svc.url, "crash", [1, 2])
    svc.kill()
    svc = service_factory(d)
    assert httpx.get(f"{svc.url}/v1/runs/crash").json()["step"] == 2
    # the retried step 2 is a replay; then the run continues
    again = httpx.post(f"{svc.url}/v1/runs/crash/steps", json={"step": 2, "samples": fixed_samples(2)}, timeout=120)
    assert again.json()["replayed"] is True
    assert httpx.post(f"{svc.url}/v1/runs", json=RUN_PPO, timeout=120).status_code == 200
    res = post_steps(svc.url, "crash", [3, 4])
    assert_same(ref, policy_tensors(d, "crash", STEPS))
    assert res[-1]["metrics"]["loss"] == ref_res[-1]["metrics"]["loss"]


def test_sigkill_during_a_step_leaves_previous_checkpoint_and_resumes(tmp_path, service_factory):
    ref, _ = reference(tmp_path, service_factory, RUN_LORA)
    d = tmp_path / "crashy"
    # the fault hook holds each commit open for a few seconds, so the kill lands mid-step
    svc = service_factory(d, {"ATTUNE_TRAINER_FAULT_DELAY_S": "30"})
    assert httpx.post(f"{svc.url}/v1/runs", json=RUN_LORA, timeout=120).status_code == 201
    ckdir = d / "runs" / "crash" / "checkpoints"
    errors = []

    def post(step):
        try:
            httpx.post(
                f"{svc.url}/v1/runs/crash/steps", json={"step": step, "samples": fixed_samples(step)}, timeout=120
            )
        except httpx.HTTPError as e:
            errors.append(e)

    for step in (1, 2):
        t = threading.Thread(target=post, args=(step,))
        t.start()
        deadline = time.time() + 60
        while not any(p.name.startswith(f".tmp-step-{step:06d}") for p in ckdir.iterdir()):
            assert time.time() < deadline, "the step never reached its commit"
            time.sleep(0.05)
        if step == 1:
            # let step 1 commit: restart the service without the delay, then crash step 2
            svc.kill()
            t.join()
            assert not (ckdir / "step-000001").exists()
            svc = service_factory(d, {"ATTUNE_TRAINER_FAULT_DELAY_S": "30"})
            r = httpx.get(f"{svc.url}/v1/runs/crash").json()
            assert r["step"] == 0 and [c["step"] for c in r["checkpoints"]] == [0]
            assert not any(p.name.startswith(".tmp-") for p in ckdir.iterdir())
            svc.kill()
            svc = service_factory(d)
            post_steps(svc.url, "crash", [1])
            svc.kill()
            svc = service_factory(d, {"ATTUNE_TRAINER_FAULT_DELAY_S": "30"})
        else:
            svc.kill()
            t.join()
    assert errors, "the killed requests should have failed"
    svc = service_factory(d)
    r = httpx.get(f"{svc.url}/v1/runs/crash").json()
    assert r["step"] == 1
    post_steps(svc.url, "crash", [2, 3, 4])
    assert_same(ref, policy_tensors(d, "crash", STEPS))
