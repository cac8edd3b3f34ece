"""The bearer token guards every route but /health, end to end; a non-loopback trainer refuses to
start without one; TLS from --tls-cert/--tls-key."""

import os
import shutil
import socket
import ssl
import subprocess
import sys
import time

import httpx
import pytest
from conftest import fixed_samples, tiny_run
from fastapi.testclient import TestClient

TOKEN = "s3cret-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def guarded(engine):
    from attune_trainer.service.server import create_app

    with TestClient(create_app(engine, token=TOKEN)) as c:
        yield c


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_health_needs_no_token_and_reveals_nothing(guarded):
    r = guarded.get("/health")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    status = guarded.get("/v1/status", headers=AUTH)
    assert status.status_code == 200 and status.json()["device"] == "cpu"


def test_every_other_route_needs_the_token(guarded):
    spec = guarded.get("/openapi.json", headers=AUTH).json()
    assert spec["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    paths = [(m.upper(), p) for p, ops in spec["paths"].items() for m in ops if p != "/health"]
    assert len(paths) >= 8
    for method, path in paths + [("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/no/such/route")]:
        url = path.replace("{run_id}", "r").replace("{step}", "1")
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"Authorization": "Basic x"}):
            r = guarded.request(method, url, headers=headers, json={})
            assert r.status_code == 401, (method, url, headers, r.status_code)
            assert r.json()["error"]["type"] == "authentication_error"
            assert r.headers["www-authenticate"].startswith("Bearer")


def test_the_scheme_is_case_insensitive(guarded):
    assert guarded.get("/v1/models", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200


def test_a_non_ascii_authorization_header_is_401_not_500(guarded):
    for value in ("Bearer sécret".encode(), b"Bearer \xff\xfe", "Bearer 令牌".encode()):
        r = guarded.get("/v1/models", headers={"Authorization": value})
        assert r.status_code == 401, (value, r.status_code, r.text)


def test_a_request_without_the_token_cannot_post_the_next_step(guarded, engine):
    """Step poisoning: whoever reaches the port must not be able to apply step n+1 of a run."""
    assert guarded.post("/v1/runs", json=tiny_run("p"), headers=AUTH).status_code == 201
    poisoned = [dict(s, reward=1000.0) for s in fixed_samples(1)]
    for headers in ({}, {"Authorization": "Bearer guess"}, {"Authorization": "Bearer " + TOKEN[:-1]}):
        r = guarded.post("/v1/runs/p/steps", json={"step": 1, "samples": poisoned}, headers=headers)
        assert r.status_code == 401
    assert engine.run_state("p")["step"] == 0 and engine.loaded["p"].in_progress_step is None
    # the real step 1 is applied, not replayed: nothing was consumed by the refused requests
    r = guarded.post("/v1/runs/p/steps", json={"step": 1, "samples": fixed_samples(1)}, headers=AUTH)
    assert r.status_code == 200 and r.json()["replayed"] is False
    assert r.json()["metrics"]["reward_mean"] < 1.0


def test_step_poisoning_is_refused_by_the_real_service(tmp_path, service_factory):
    svc = service_factory(tmp_path / "state", {"TRAINER_TOKEN": TOKEN})
    assert httpx.get(f"{svc.url}/health", timeout=30).json() == {"status": "ok"}
    assert httpx.post(f"{svc.url}/v1/runs", json=tiny_run("p"), headers=AUTH, timeout=120).status_code == 201
    r = httpx.post(f"{svc.url}/v1/runs/p/steps", json={"step": 1, "samples": fixed_samples(1)}, timeout=60)
    assert r.status_code == 401
    assert httpx.get(f"{svc.url}/v1/runs/p", headers=AUTH, timeout=30).json()["step"] == 0


def test_serving_beyond_loopback_without_a_token_refuses_to_start(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRAINER_TOKEN"}
    cmd = [sys.executable, "-m", "attune_trainer", "serve", "--host", "0.0.0.0", "--port", str(_free_port())]
    t0 = time.time()
    try:
        out = subprocess.run(
            cmd + ["--state-dir", str(tmp_path / "state")], env=env, capture_output=True, text=True, timeout=10
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the trainer started on 0.0.0.0 without a token")
    assert out.returncode != 0 and time.time() - t0 < 10
    assert "TRAINER_TOKEN" in out.stderr and "0.0.0.0" in out.stderr, out.stderr
    assert not (tmp_path / "state").exists()  # refused before touching anything


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.9", True), ("::1", True), ("[::1]", True), ("localhost", True)]
    + [("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("gpu-host.internal", False)],
)
def test_which_addresses_are_loopback(host, loopback):
    from attune_trainer.cli import is_loopback

    assert is_loopback(host) is loopback


@pytest.fixture
def self_signed(tmp_path):
    assert shutil.which("openssl") is not None, "openssl is needed to make the test's certificate"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls(tmp_path, service_factory, self_signed):
    cert, key = self_signed
    svc = service_factory(
        tmp_path / "state", {"TRAINER_TOKEN": TOKEN}, args=["--tls-cert", str(cert), "--tls-key", str(key)]
    )
    assert svc.url.startswith("https://127.0.0.1:")
    with httpx.Client(verify=ssl.create_default_context(cafile=str(cert)), timeout=30) as client:
        assert client.get(f"{svc.url}/health").json() == {"status": "ok"}
        assert client.get(f"{svc.url}/v1/models").status_code == 401
        assert client.get(f"{svc.url}/v1/models", headers=AUTH).status_code == 200
    with pytest.raises(httpx.HTTPError):  # no plain HTTP on the TLS port
        httpx.get(svc.url.replace("https://", "http://") + "/health", timeout=10)


def test_tls_options_are_checked_before_start(tmp_path, self_signed):
    cert, _ = self_signed
    base = [sys.executable, "-m", "attune_trainer", "serve", "--port", "0", "--state-dir", str(tmp_path / "s")]
    for extra, says in (
        (["--tls-cert", str(cert)], "--tls-cert and --tls-key go together"),
        (["--tls-cert", str(cert), "--tls-key", str(tmp_path / "missing.pem")], "cannot be used"),
    ):
        out = subprocess.run(base + extra, capture_output=True, text=True, timeout=30)
        assert out.returncode != 0 and says in out.stderr, out.stderr
