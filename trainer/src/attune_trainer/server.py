"""FastAPI app: the HTTP contract of the trainer service (OpenAPI at /docs and /openapi.json)."""

from __future__ import annotations

import hmac
import os
import time

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import __version__
from .dispatch import Dispatcher
from .engine import Engine
from .errors import Conflict, DiskFull, InvalidRequest, NotFound, RunNotFound, TrainerError
from .log import log
from .schemas import RUN_ID_RE, ChatCompletionRequest, RunCreate, StepRequest

# status code and error type of each kind of domain error (most specific first)
ERROR_STATUS: list[tuple[type[TrainerError], int, str]] = [
    (NotFound, 404, "not_found_error"),
    (Conflict, 409, "conflict_error"),
    (InvalidRequest, 422, "invalid_request_error"),
    (DiskFull, 507, "storage_error"),  # 5xx: the orchestrator retries once space is freed
]


def _error_status(exc: TrainerError) -> tuple[int, str]:
    for kind, status, type_ in ERROR_STATUS:
        if isinstance(exc, kind):
            return status, type_
    return 500, "server_error"


def _err(status: int, message: str, type_: str, field: str | None = None, **extra) -> JSONResponse:
    body = {"message": message, "type": type_}
    if field:
        body["field"] = field
    body.update({k: v for k, v in extra.items() if v is not None})
    return JSONResponse(status_code=status, content={"error": body})


def _validation_response(errors: list) -> JSONResponse:
    parts = []
    first_field = None
    for e in errors:
        if e.get("type") == "json_invalid":
            pos = [x for x in e.get("loc", ()) if isinstance(x, int)]
            first_field = first_field or "body"
            parts.append(f"body: invalid JSON ({e.get('msg')}" + (f" at character {pos[0]})" if pos else ")"))
            continue
        loc = [str(x) for x in e.get("loc", ()) if x not in ("body",)]
        fld = ".".join(loc) if loc else "body"
        first_field = first_field or fld
        parts.append(f"{fld}: {e.get('msg')}")
    return _err(422, "; ".join(parts) or "invalid request body", "invalid_request_error", field=first_field)


def create_app(engine: Engine, dispatcher: Dispatcher | None = None, token: str | None = None) -> FastAPI:
    dispatcher = dispatcher or Dispatcher(engine)
    token = token if token is not None else (os.environ.get("TRAINER_TOKEN") or None)
    app = FastAPI(
        title="Attune trainer",
        version=__version__,
        description="GPU optimizer for RLVER: PPO/GRPO steps applied exactly once, checkpoints, "
        "OpenAI-compatible sampling from a run's weights.",
    )

    @app.middleware("http")
    async def auth_and_log(request: Request, call_next):
        t0 = time.time()
        if token:
            got = request.headers.get("authorization", "")
            if not (got.startswith("Bearer ") and hmac.compare_digest(got[7:].strip(), token)):
                log("warning", "unauthorized request", method=request.method, path=request.url.path)
                return _err(
                    401,
                    "missing or invalid bearer token: send 'Authorization: Bearer <TRAINER_TOKEN>'",
                    "authentication_error",
                )
        resp = await call_next(request)
        if request.url.path != "/health":
            log(
                "info",
                "http",
                method=request.method,
                path=request.url.path,
                status=resp.status_code,
                seconds=round(time.time() - t0, 4),
            )
        return resp

    @app.exception_handler(TrainerError)
    async def _trainer_error(_req, exc: TrainerError):
        status, type_ = _error_status(exc)
        return _err(status, exc.message, type_, exc.field, **exc.details)

    @app.exception_handler(RequestValidationError)
    async def _req_validation(_req, exc: RequestValidationError):
        return _validation_response(exc.errors())

    @app.exception_handler(ValidationError)
    async def _validation(_req, exc: ValidationError):
        return _validation_response(exc.errors())

    @app.exception_handler(StarletteHTTPException)
    async def _http(_req, exc: StarletteHTTPException):
        return _err(exc.status_code, str(exc.detail), "not_found_error" if exc.status_code == 404 else "http_error")

    @app.exception_handler(Exception)
    async def _internal(_req, exc: Exception):
        log("error", "internal error", error=repr(exc))
        return _err(500, f"internal error: {exc!r}", "server_error")

    def _check_run_id(run_id: str) -> None:
        if not RUN_ID_RE.match(run_id):
            raise RunNotFound(run_id, f"run {run_id!r} not found (not a valid run id)")

    @app.get("/health", summary="liveness (200 while the process serves)")
    def health():
        return {
            "status": "ok",
            "version": __version__,
            "device": str(engine.device),
            "dtype": engine.dtype_name,
            "world_size": engine.world,
            "runs_loaded": list(engine.loaded.keys()),
        }

    @app.post("/v1/runs", status_code=201, summary="create a run (idempotent; 409 on a different config)")
    def create_run(body: RunCreate):
        created, state = dispatcher.call("create_run", body.model_dump(mode="json"))
        return JSONResponse(status_code=201 if created else 200, content=state)

    @app.get("/v1/runs", summary="list runs")
    def list_runs():
        return {"runs": [engine.run_state(r) for r in engine.list_runs()]}

    @app.get("/v1/runs/{run_id}", summary="a run's state: last applied step, checkpoints")
    def get_run(run_id: str):
        _check_run_id(run_id)
        return engine.run_state(run_id)

    @app.post("/v1/runs/{run_id}/steps", summary="apply step n exactly once (n = last + 1)")
    def post_step(run_id: str, body: StepRequest):
        _check_run_id(run_id)
        if not engine.run_store(run_id).exists():
            raise RunNotFound(run_id)
        return dispatcher.call("apply_step", run_id, body.model_dump(mode="json"))

    @app.get("/v1/runs/{run_id}/steps/{step}", summary="the stored result of an applied step")
    def get_step(run_id: str, step: int):
        _check_run_id(run_id)
        store = engine.run_store(run_id)
        if not store.exists():
            raise RunNotFound(run_id)
        res = store.read_result(step)
        if res is None:
            last = store.latest_step() or 0
            raise NotFound(f"run {run_id!r} has not applied step {step} (last applied: {last})", field="step")
        res = dict(res)
        res.pop("samples_sha256", None)
        return res

    @app.post("/v1/chat/completions", summary="OpenAI-compatible sampling (model = run id or run@step)")
    def chat(body: ChatCompletionRequest):
        return dispatcher.call("chat", body.model_dump(mode="json", exclude_none=False))

    @app.get("/v1/models", summary="OpenAI-compatible model list: runs and run@step checkpoints")
    def models():
        return {"object": "list", "data": engine.models()}

    return app
