"""Response bodies of the HTTP contract, for the OpenAPI document (/openapi.json, /docs).

The routes return plain dicts; these models describe them, and the schema fuzz test
(`tests/test_fuzz.py`) checks every response against them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorDetail(Open):
    message: str
    type: str
    field: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    status: Literal["ok"]


class Status(Open):
    status: Literal["ok"]
    version: str
    device: str
    dtype: str
    world_size: int
    runs_loaded: list[str]


class Checkpoint(Open):
    step: int
    path: str | None  # null: the step's weights are an export only (no snapshot)
    export_path: str | None
    export_format: str | None
    model: str


class RunState(Open):
    run_id: str
    step: int
    algorithm: str
    base_model: str
    lora: dict[str, Any] | None
    seed: int
    hyperparameters: dict[str, Any]
    checkpoints: list[Checkpoint]
    created: float | None
    loaded: bool
    in_progress_step: int | None
    model: str


class RunList(BaseModel):
    runs: list[RunState]


class StepCheckpoint(Open):
    step: int
    path: str | None  # null: no snapshot this step, its weights are an export only
    export_path: str | None
    export_format: str | None


class AdapterFile(BaseModel):
    name: str
    size: int
    sha256: str


class AdapterManifest(BaseModel):
    run_id: str
    step: int
    # peft_lora: a LoRA adapter (.../adapter); hf_full: a model directory of full weights (.../weights)
    format: Literal["peft_lora", "hf_full"]
    files: list[AdapterFile]
    # sha256 of the lines `<sha256>  <name>\n` of the files in name order
    digest: str


class TrainedSample(Open):
    tokens: Literal["sampled", "retokenized"]
    completion_tokens: int
    completion_ids_sha256: str
    logprob_gap_max: float | None


class StepResult(Open):
    run_id: str
    step: int
    model: str
    # numbers, and `staleness_histogram`: sample counts by staleness
    metrics: dict[str, float | dict[str, int] | None]
    checkpoint: StepCheckpoint | None  # null: no snapshot and no export this step (live weights, then a replay)
    storage: dict[str, float | bool] | None = None  # bytes written, snapshot and export seconds
    trained_samples: list[TrainedSample] | None = None
    replayed: bool | None = None
    # ms from the checkpoint's commit to this answer, on the trainer's clock; null for a stored result
    commit_to_answer_ms: float | None = None


class AssistantMessage(Open):
    role: Literal["assistant"]
    content: str
    refusal: None = None


class TokenLogprob(Open):
    token: str
    logprob: float
    bytes: list[int] | None
    top_logprobs: list[dict[str, Any]]


class ChoiceLogprobs(Open):
    content: list[TokenLogprob]
    refusal: None = None


class Choice(Open):
    index: int
    message: AssistantMessage
    logprobs: ChoiceLogprobs | None = None
    finish_reason: Literal["stop", "length"]


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(Open):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    system_fingerprint: str
    choices: list[Choice]
    usage: Usage


class ModelCard(Open):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    parent: str | None = None


class ModelList(BaseModel):
    object: Literal["list"]
    data: list[ModelCard]


def documented(ok: type[BaseModel], *statuses: int) -> dict:
    """`responses=` of a route: its success body, and the error body for every other status."""
    out: dict = {status: {"model": ok} for status in statuses or (200,)}
    out["default"] = {"model": ErrorResponse, "description": "an error: what went wrong and which field"}
    return out


class WeightTransferJoined(BaseModel):
    joined: Literal[True]
    rank: Literal[0]
    world_size: int


class StepTensors(BaseModel):
    """A step's tensors as vLLM's `/update_weights` takes them (its `update_info`), with their run and step."""

    run_id: str
    step: int
    names: list[str]
    dtype_names: list[str]
    shapes: list[list[int]]


class WeightsSent(BaseModel):
    run_id: str
    step: int
    tensors: int
    bytes: int
    seconds: float
