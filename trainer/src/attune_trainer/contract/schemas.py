"""Request/response schemas of the HTTP contract (pydantic v2; FastAPI renders them in /docs)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)

from attune_trainer.contract.algorithms import ALGORITHM_NAMES
from attune_trainer.contract.limits import (
    CHOICES,
    MESSAGE_CHARS,
    MESSAGE_PARTS,
    MESSAGES,
    MODEL_CHARS,
    ROLE_CHARS,
    STOP_CHARS,
    STOP_STRINGS,
)

# \Z, not $: $ would also match before a trailing newline. The orchestrator checks the same rule
# (src/core/names.ts); test/contracts/trainerContracts.test.ts keeps the two equal.
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


# The same rules for the OpenAPI document (JSON Schema / Rust regex: `$` is the end of the text there).
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}(@[0-9]+)?$"


def valid_run_id(value: object) -> bool:
    """The one run-id rule: every route and the store check it (a run id becomes a directory name)."""
    return isinstance(value, str) and RUN_ID_RE.match(value) is not None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoraSpec(Strict):
    r: int = Field(16, ge=1, le=512, description="LoRA rank (vLLM's default --max-lora-rank is 16)")
    alpha: float = Field(32.0, gt=0)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )


# Marks a hyperparameter an operator may change on a live run (`attune set`), and what the run must
# have for it to mean anything. The orchestrator generates its live-settings table from these marks.
LIVE: dict[str, Any] = {"x-live": True}
LIVE_WITH_CRITIC: dict[str, Any] = {"x-live": True, "x-needs": "critic"}


class Hyperparameters(Strict):
    learning_rate: float = Field(
        1e-6, gt=0, le=1, description="policy learning rate (paper: 1e-6)", json_schema_extra=LIVE
    )
    warmup_steps: int = Field(0, ge=0, description="linear LR warm-up over this many run steps")
    clip_ratio: float = Field(0.2, gt=0, lt=1, description="PPO/GRPO surrogate clip epsilon", json_schema_extra=LIVE)
    kl_coef: float = Field(0.0, ge=0, description="weight of the k3 KL to the frozen reference", json_schema_extra=LIVE)
    entropy_coef: float = Field(0.0, ge=0, description="entropy bonus weight", json_schema_extra=LIVE)
    value_learning_rate: float = Field(
        1e-5, gt=0, le=1, description="critic learning rate (PPO)", json_schema_extra=LIVE_WITH_CRITIC
    )
    value_clip: float = Field(
        0.5, gt=0, description="clip range of the value loss (PPO)", json_schema_extra={"x-needs": "critic"}
    )
    gamma: float = Field(1.0, ge=0, le=1)
    lam: float = Field(1.0, ge=0, le=1)
    max_grad_norm: float = Field(1.0, gt=0, json_schema_extra=LIVE)
    micro_batch_size: int = Field(4, ge=1, description="samples per forward/backward (grad accumulation)")
    mini_batch_size: int | None = Field(
        None, ge=1, description="samples per optimizer update; null = the whole step (one update)"
    )
    ppo_epochs: int = Field(1, ge=1, le=16, description="passes over the step's samples")
    weight_decay: float = Field(0.0, ge=0)
    adam_beta1: float = Field(0.9, ge=0, lt=1)
    adam_beta2: float = Field(0.999, ge=0, lt=1)
    adam_eps: float = Field(1e-8, gt=0)
    advantage_eps: float = Field(1e-6, gt=0, description="eps in (r - mean) / (std + eps)")
    normalize_advantage_std: bool = Field(True, description="GRPO: divide by the group std")
    whiten_advantages: bool = Field(True, description="PPO: whiten GAE advantages over the step")
    temperature: float = Field(1.0, gt=0, description="sampling temperature the logits are scaled by")
    max_length: int = Field(4096, ge=8, description="max prompt+completion tokens (prompt cut on the left)")
    append_eos: bool = Field(True, description="append the end-of-turn token to each completion")
    gradient_checkpointing: bool = False
    keep_checkpoints: int = Field(
        0,
        ge=0,
        description="LoRA: keep the last N adapter checkpoints (0 = all); full weights keep their last 2 snapshots",
    )
    snapshot_every: int | None = Field(
        None,
        ge=1,
        description="snapshot weights and AdamW states every N steps; the steps between are durable by the "
        "step log and replayed after a crash (null = the mode's default: every step for LoRA, every 10 for full "
        "weights)",
    )
    export_keep: int = Field(
        0,
        ge=0,
        le=1000,
        description="write each step's policy weights in the served dtype and keep the newest N (what a vLLM "
        "publish, a replica's download or sampling an older step within maxStaleness reads); 0 = only the "
        "snapshots and the live weights have them",
    )
    is_truncation: float = Field(
        2.0,
        gt=0,
        description="off-policy correction: each token's policy loss is weighted by "
        "min(exp(logp_before_update - logp_sampler), is_truncation)",
    )


class RunCreate(Strict):
    run_id: str = Field(
        ..., pattern=RUN_ID_PATTERN, description="letters, digits, '.', '_', '-' (no '@' or '/'), at most 128"
    )
    base_model: str = Field(
        ...,
        max_length=4096,
        description="'tiny-random', 'smollm2-135m', or a HF model directory or .gguf file inside the trainer's "
        "--models-dir (relative to it, or an absolute path under it)",
    )
    algorithm: Literal[ALGORITHM_NAMES] = Field(..., description="an algorithm of the trainer's registry")
    lora: LoraSpec | None = None
    hyperparameters: Hyperparameters = Field(default_factory=Hyperparameters)
    seed: int = Field(0, ge=0, lt=2**31)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str) -> str:
        if not valid_run_id(v):
            raise ValueError(f"run_id must match {RUN_ID_RE.pattern}")
        return v


def _check_content(content: str | list[dict[str, Any]] | None):
    if isinstance(content, str) and len(content) > MESSAGE_CHARS:
        raise ValueError(f"a message has {len(content)} characters; at most {MESSAGE_CHARS}")
    if isinstance(content, list):
        if len(content) > MESSAGE_PARTS:
            raise ValueError(f"a message has {len(content)} content parts; at most {MESSAGE_PARTS}")
        chars = sum(len(str(p.get("text", ""))) for p in content)
        if chars > MESSAGE_CHARS:
            raise ValueError(f"a message has {chars} characters of text; at most {MESSAGE_CHARS}")
    return content


MessageContent = Annotated[
    str | list[dict[str, Any]] | None,
    AfterValidator(_check_content),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "maxLength": MESSAGE_CHARS},
                {"type": "array", "items": {"type": "object"}, "maxItems": MESSAGE_PARTS},
                {"type": "null"},
            ]
        }
    ),
]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(..., max_length=ROLE_CHARS)
    content: MessageContent = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if p.get("type", "text") == "text")


def _check_stop(stop: str | list[str] | None):
    strings = [stop] if isinstance(stop, str) else (stop or [])
    if len(strings) > STOP_STRINGS:
        raise ValueError(f"{len(strings)} stop strings; at most {STOP_STRINGS}")
    if any(len(s) > STOP_CHARS for s in strings):
        raise ValueError(f"a stop string is longer than {STOP_CHARS} characters")
    return stop


StopStrings = Annotated[
    str | list[str] | None,
    AfterValidator(_check_stop),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "maxLength": STOP_CHARS},
                {"type": "array", "items": {"type": "string", "maxLength": STOP_CHARS}, "maxItems": STOP_STRINGS},
                {"type": "null"},
            ]
        }
    ),
]


CREDIT_MODES = ("final", "turn", "mixed")


class TurnOutcome(Strict):
    """What one assistant turn of a dialogue did, for credit by turn (`StepRequest.credit`)."""

    index: int = Field(..., ge=0, description="the turn's position in its dialogue (`trajectory`), from 0")
    emotion_change: float = Field(
        ..., allow_inf_nan=False, description="the emotion change the turn caused (0 for an unanalysed turn)"
    )
    final_emotion: float = Field(..., allow_inf_nan=False, description="the emotion the dialogue ended at")


class CreditSettings(Strict):
    """How a dialogue's reward is shared out over its turns (update/credit.py says what each mode does)."""

    mode: Literal[CREDIT_MODES] = "final"
    turn_discount: float = Field(1.0, ge=0, le=1, description="discount per later turn in a turn's return")
    weight: float = Field(0.5, ge=0, le=1, description="`mixed`: the turn return's weight; the reward has 1 - weight")


class Sample(Strict):
    prompt: list[ChatMessage] = Field(..., min_length=1, max_length=MESSAGES)
    completion: str
    reward: float = Field(..., allow_inf_nan=False)
    group: str = Field("", description="GRPO group key (e.g. scenario id); one group per prompt set")
    trajectory: str = Field(
        "",
        description="dialogue id: samples of one multi-turn dialogue share it, so GRPO group "
        "statistics count each dialogue once however many turns it has ('' = each sample alone)",
    )
    completion_ids: list[Annotated[int, Field(ge=0)]] | None = Field(
        None,
        description="the token ids the sampler produced (end-of-turn included when sampled): trained on "
        "exactly, not re-tokenised from `completion`; null = re-tokenise `completion`",
    )
    completion_logprobs: list[Annotated[float, Field(allow_inf_nan=False)]] | None = Field(
        None,
        description="the sampler's log-probability of each of `completion_ids` (raw distribution), "
        "compared with the trainer's before the update and the behaviour policy of the off-policy correction",
    )
    policy_version: int | None = Field(
        None,
        ge=0,
        description="the run step whose weights sampled this completion (0 = the base); staleness = "
        "(step - 1) - policy_version; null = sampled from the weights this step updates",
    )

    turn: TurnOutcome | None = Field(
        None,
        description="the turn's outcome, for the step's `credit`: then `reward` is the dialogue's reward and "
        "`trajectory` its id; null = `reward` is what this sample is trained on",
    )

    @model_validator(mode="after")
    def _logprobs_match_ids(self) -> Sample:
        if self.completion_logprobs is not None:
            if self.completion_ids is None:
                raise ValueError("completion_logprobs needs completion_ids")
            if len(self.completion_logprobs) != len(self.completion_ids):
                raise ValueError(
                    f"completion_logprobs has {len(self.completion_logprobs)} values for "
                    f"{len(self.completion_ids)} completion_ids"
                )
        return self

    def digest_form(self) -> dict:
        """The sample as hashed for the exactly-once check: a sample without token ids hashes as
        it did before they existed, so a step retried across an upgrade still replays."""
        out = self.model_dump(mode="json")
        for key in ("completion_ids", "completion_logprobs", "policy_version", "turn"):
            if out.get(key) is None:
                out.pop(key, None)
        return out


def _live_fields() -> dict[str, Any]:
    """The live-marked hyperparameters, each optional with the bounds it has in Hyperparameters."""
    fields: dict[str, Any] = {}
    for name, info in Hyperparameters.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("x-live"):
            fields[name] = (Annotated[(info.annotation, *info.metadata)] | None, None)
    return fields


# Applied to one step only: the orchestrator sends the operator's values with each step.
StepOverrides = create_model(
    "StepOverrides",
    __base__=Strict,
    __doc__="Hyperparameters an operator changed on a live run.",
    **_live_fields(),
)


class StepRequest(Strict):
    step: int = Field(..., ge=1)
    samples: list[Sample] = Field(..., min_length=1)
    hyperparameters: StepOverrides | None = None
    credit: CreditSettings | None = Field(
        None, description="credit the samples' turns with these settings; null = each sample's reward as given"
    )


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # the openai client sends fields we ignore
    model: str = Field(
        ..., max_length=MODEL_CHARS, pattern=MODEL_PATTERN, description="a run id, or run@step for a checkpoint"
    )
    messages: list[ChatMessage] = Field(..., min_length=1, max_length=MESSAGES)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1, description="at most the run's max_length")
    max_completion_tokens: int | None = Field(None, ge=1, description="at most the run's max_length")
    seed: int | None = Field(None, ge=-(2**63), le=2**64 - 1)
    stop: StopStrings = None
    n: int = Field(1, ge=1, le=CHOICES)
    stream: bool | None = False
    logprobs: bool | None = Field(None, description="return each sampled token with its log-probability")
    top_logprobs: int | None = Field(None, ge=0, le=0, description="alternatives per token: not supported (0)")
    return_tokens_as_token_ids: bool | None = Field(
        None, description="vLLM's convention: each logprobs token is 'token_id:N', so the exact ids come back"
    )
