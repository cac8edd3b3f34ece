"""Request/response schemas of the HTTP contract (pydantic v2; FastAPI renders them in /docs)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# \Z, not $: $ would also match before a trailing newline. The orchestrator checks the same rule
# (src/core/names.ts); test/contracts/trainerContracts.test.ts keeps the two equal.
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoraSpec(Strict):
    r: int = Field(16, ge=1, le=512, description="LoRA rank (vLLM's default --max-lora-rank is 16)")
    alpha: float = Field(32.0, gt=0)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )


class Hyperparameters(Strict):
    learning_rate: float = Field(1e-6, gt=0, le=1, description="policy learning rate (paper: 1e-6)")
    warmup_steps: int = Field(0, ge=0, description="linear LR warm-up over this many run steps")
    clip_ratio: float = Field(0.2, gt=0, lt=1, description="PPO/GRPO surrogate clip epsilon")
    kl_coef: float = Field(0.0, ge=0, description="weight of the k3 KL to the frozen reference")
    entropy_coef: float = Field(0.0, ge=0, description="entropy bonus weight")
    value_learning_rate: float = Field(1e-5, gt=0, le=1, description="critic learning rate (PPO)")
    value_clip: float = Field(0.5, gt=0, description="clip range of the value loss (PPO)")
    gamma: float = Field(1.0, ge=0, le=1)
    lam: float = Field(1.0, ge=0, le=1)
    max_grad_norm: float = Field(1.0, gt=0)
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
    keep_checkpoints: int = Field(0, ge=0, description="keep only the last N weight checkpoints (0 = all)")


class RunCreate(Strict):
    run_id: str = Field(..., description="letters, digits, '.', '_', '-' (no '@' or '/')")
    base_model: str = Field(..., description="'tiny-random', 'smollm2-135m' or a local HF model directory")
    algorithm: Literal["grpo", "ppo"]
    lora: LoraSpec | None = None
    hyperparameters: Hyperparameters = Field(default_factory=Hyperparameters)
    seed: int = Field(0, ge=0, lt=2**31)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str) -> str:
        if not RUN_ID_RE.match(v):
            raise ValueError(f"run_id must match {RUN_ID_RE.pattern}")
        return v


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if p.get("type", "text") == "text")


class Sample(Strict):
    prompt: list[ChatMessage] = Field(..., min_length=1)
    completion: str
    reward: float = Field(..., allow_inf_nan=False)
    group: str = Field("", description="GRPO group key (e.g. scenario id); one group per prompt set")
    trajectory: str = Field(
        "",
        description="dialogue id: samples of one multi-turn dialogue share it, so GRPO group "
        "statistics count each dialogue once however many turns it has ('' = each sample alone)",
    )


class StepOverrides(Strict):
    """Hyperparameters an operator changed on a live run.

    Applied to this step only: the orchestrator sends them each step.
    """

    learning_rate: float | None = Field(None, gt=0, le=1)
    clip_ratio: float | None = Field(None, gt=0, lt=1)
    kl_coef: float | None = Field(None, ge=0)
    entropy_coef: float | None = Field(None, ge=0)
    value_learning_rate: float | None = Field(None, gt=0, le=1)
    max_grad_norm: float | None = Field(None, gt=0)


class StepRequest(Strict):
    step: int = Field(..., ge=1)
    samples: list[Sample] = Field(..., min_length=1)
    hyperparameters: StepOverrides | None = None


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # the openai client sends fields we ignore
    model: str
    messages: list[ChatMessage] = Field(..., min_length=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    n: int = Field(1, ge=1, le=64)
    stream: bool | None = False
