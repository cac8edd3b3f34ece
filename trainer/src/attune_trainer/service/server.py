"""FastAPI app: the HTTP contract of the trainer service (OpenAPI at /docs and /openapi.json)."""

from __future__ import annotations

import os

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from attune_trainer import __version__
from attune_trainer.contract.errors import (
    Conflict,
    DiskFull,
    InvalidRequest,
    InvalidRunId,
    NotFound,
    RunNotFound,
    TrainerError,
    WeightTransferTimedOut,
    WeightTransferUnavailable,
)
from attune_trainer.contract.schemas import ChatCompletionRequest, RunCreate, StepRequest, valid_run_id
from attune_trainer.engine.dispatch import Dispatcher
from attune_trainer.engine.engine import Engine
from attune_trainer.engine.prometheus import CONTENT_TYPE as PROMETHEUS_CONTENT_TYPE
from attune_trainer.log import log
from attune_trainer.service.http_guard import UNAUTHENTICATED_PATHS, RequestGuard
from attune_trainer.service.responses import (
    AdapterManifest,
    ChatCompletion,
    Health,
    ModelList,
    RunList,
    RunState,
    Status,
    StepResult,
    documented,
)
from attune_trainer.service.weight_transfer_routes import add_weight_transfer_routes
from attune_trainer.state.adapter_files import adapter_file, adapter_manifest
from attune_trainer.state.step_weights import step_weights
from attune_trainer.state.weights_files import weights_file, weights_manifest
from attune_trainer.transfer.sender import VllmNcclSender, WeightSender

# status code and error type of each kind of domain error (most specific first)
ERROR_STATUS: list[tuple[type[TrainerError], int, str]] = [
    (NotFound, 404, "not_found_error"),
    (Conflict, 409, "conflict_error"),
    (InvalidRequest, 422, "invalid_request_error"),
    (DiskFull, 507, "storage_error"),  # 5xx: the orchestrator retries once space is freed
    # not on this host (no vLLM, no CUDA): 501, which the orchestrator does not retry
    (WeightTransferUnavailable, 501, "unavailable_error"),
    # a broadcast past its deadline (a vLLM worker died): 5xx, retried by a publish that joins afresh
    (WeightTransferTimedOut, 504, "timeout_error"),
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


def create_app(
    engine: Engine,
    dispatcher: Dispatcher | None = None,
    token: str | None = None,
    weight_sender: WeightSender | None = None,
) -> FastAPI:
    """The HTTP app; `token` (default: $TRAINER_TOKEN) guards every route but /health; `weight_sender`
    (default: vLLM's NCCL trainer engine, imported when first used) sends full weights to vLLM."""
    dispatcher = dispatcher or Dispatcher(engine)
    token = token if token is not None else (os.environ.get("TRAINER_TOKEN") or None)
    app = FastAPI(
        title="Attune trainer",
        version=__version__,
        description="GPU optimizer for RLVER: PPO/GRPO steps applied exactly once, checkpoints, "
        "OpenAI-compatible sampling from a run's weights.",
    )
    app.add_middleware(RequestGuard, token=token)
    app.openapi = lambda: _openapi_with_auth(app, bool(token))
    _add_error_handlers(app)
    # registration order is the order of /openapi.json's paths
    _add_service_routes(app, engine)
    _add_run_routes(app, engine, dispatcher)
    _add_checkpoint_routes(app, engine, dispatcher)
    add_weight_transfer_routes(app, engine, weight_sender or VllmNcclSender())
    _add_openai_routes(app, engine, dispatcher)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """Every error, the contract's and the framework's, as `{"error": {message, type, field?}}`."""

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
    if not valid_run_id(run_id):
        raise InvalidRunId(run_id)


def _add_service_routes(app: FastAPI, engine: Engine) -> None:
    """Liveness, status and Prometheus metrics."""

    @app.get("/health", summary="liveness (200 while the process serves); needs no token", responses=documented(Health))
    def health():
        return {"status": "ok"}

    @app.get("/v1/status", summary="version, device, precision, ranks, runs in memory", responses=documented(Status))
    def status():
        return {
            "status": "ok",
            "version": __version__,
            "device": str(engine.device),
            "dtype": engine.dtype_name,
            "world_size": engine.world,
            "runs_loaded": list(engine.loaded.keys()),
        }

    @app.get(
        "/metrics",
        summary="Prometheus metrics: steps, step time, tokens per second, memory; needs the token like /v1/status",
        response_class=PlainTextResponse,
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "text format 0.0.4"},
            "default": documented(Health)["default"],
        },
    )
    def metrics():
        return PlainTextResponse(engine.metrics.render(), media_type=PROMETHEUS_CONTENT_TYPE)


def _add_run_routes(app: FastAPI, engine: Engine, dispatcher: Dispatcher) -> None:
    """Runs and their exactly-once steps."""

    @app.post(
        "/v1/runs",
        status_code=201,
        summary="create a run (idempotent; 409 on a different config)",
        responses=documented(RunState, 200, 201),
    )
    def create_run(body: RunCreate):
        created, state = dispatcher.call("create_run", body.model_dump(mode="json"))
        return JSONResponse(status_code=201 if created else 200, content=state)

    @app.get("/v1/runs", summary="list runs", responses=documented(RunList))
    def list_runs():
        return {"runs": [engine.run_state(r) for r in engine.list_runs()]}

    @app.get(
        "/v1/runs/{run_id}", summary="a run's state: last applied step, checkpoints", responses=documented(RunState)
    )
    def get_run(run_id: str):
        _check_run_id(run_id)
        return engine.run_state(run_id)

    @app.post(
        "/v1/runs/{run_id}/steps",
        summary="apply step n exactly once (n = last + 1)",
        responses=documented(StepResult),
    )
    def post_step(run_id: str, body: StepRequest):
        _check_run_id(run_id)
        if not engine.run_store(run_id).exists():
            raise RunNotFound(run_id)
        return dispatcher.call("apply_step", run_id, body.model_dump(mode="json"))

    @app.get(
        "/v1/runs/{run_id}/steps/{step}",
        summary="the stored result of an applied step",
        responses=documented(StepResult),
    )
    def get_step(run_id: str, step: int):
        _check_run_id(run_id)
        return _stored_step_result(engine, run_id, step)


def _stored_step_result(engine: Engine, run_id: str, step: int) -> dict:
    store = engine.run_store(run_id)
    if not store.exists():
        raise RunNotFound(run_id)
    res = store.read_result(step)
    if res is None:
        last = store.latest_step() or 0
        raise NotFound(f"run {run_id!r} has not applied step {step} (last applied: {last})", field="step")
    res = dict(res)
    res.pop("samples_sha256", None)
    if res.get("checkpoint"):
        # where the step's weights are now: a snapshot pruned since may still have its export, or none
        weights = step_weights(store, step) or {}
        res["checkpoint"] = {**res["checkpoint"], "export_path": weights.get("path")}
    return res


def _add_checkpoint_routes(app: FastAPI, engine: Engine, dispatcher: Dispatcher) -> None:
    """A checkpoint's LoRA adapter or full weights: its manifest and its files."""
    _add_files_routes(app, engine, dispatcher, "adapter", "a checkpoint's LoRA adapter", adapter_manifest, adapter_file)
    _add_files_routes(
        app,
        engine,
        dispatcher,
        "weights",
        "a full fine-tuning checkpoint's model directory",
        weights_manifest,
        weights_file,
    )


def _add_files_routes(
    app: FastAPI, engine: Engine, dispatcher: Dispatcher, kind: str, what: str, manifest_of, file_of
) -> None:
    """`.../{kind}`: the files' manifest (name, size, sha256, digest); `.../{kind}/{name}`: one of them."""

    @app.get(
        f"/v1/runs/{{run_id}}/checkpoints/{{step}}/{kind}",
        summary=f"{what}: its files (name, size, sha256) and the digest over them",
        responses=documented(AdapterManifest),
        name=f"get_{kind}",
    )
    def get_manifest(run_id: str, step: int):
        _check_run_id(run_id)
        # The current step of a run between snapshots is only in memory: written out first (the final model).
        dispatcher.call("export_current", run_id, step)
        return manifest_of(engine.run_store(run_id), step)

    @app.get(
        f"/v1/runs/{{run_id}}/checkpoints/{{step}}/{kind}/{{name}}",
        summary=f"one file of {what}, as the manifest names it",
        response_class=FileResponse,
        responses={
            200: {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
            "default": documented(Health)["default"],
        },
        name=f"get_{kind}_file",
    )
    def get_file(run_id: str, step: int, name: str):
        _check_run_id(run_id)
        path = file_of(engine.run_store(run_id), step, name)
        return FileResponse(path, media_type="application/octet-stream", filename=name)


def _add_openai_routes(app: FastAPI, engine: Engine, dispatcher: Dispatcher) -> None:
    """OpenAI-compatible sampling and model list."""

    @app.post(
        "/v1/chat/completions",
        summary="OpenAI-compatible sampling (model = run id or run@step)",
        responses=documented(ChatCompletion),
    )
    def chat(body: ChatCompletionRequest):
        return dispatcher.call("chat", body.model_dump(mode="json", exclude_none=False))

    @app.get(
        "/v1/models",
        summary="OpenAI-compatible model list: runs and run@step checkpoints",
        responses=documented(ModelList),
    )
    def models():
        return {"object": "list", "data": engine.models()}


def _openapi_with_auth(app: FastAPI, token_required: bool) -> dict:
    """The generated document, plus the bearer scheme on every route but /health when a token is set."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        if token_required:
            schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            for path, operations in schema["paths"].items():
                for operation in operations.values():
                    operation["security"] = [] if path in UNAUTHENTICATED_PATHS else [{"bearer": []}]
        app.openapi_schema = schema
    return app.openapi_schema
