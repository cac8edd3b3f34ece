"""Sampling from a run's policy over the OpenAI chat API (`run` or `run@step`), and the model list.

`model: "run"` samples the run's live weights (collectively, on every rank); `"run@step"` an earlier
checkpoint, loaded for inference on this rank and kept in a small cache.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from contextlib import ExitStack
from pathlib import Path

from attune_trainer.compute import Compute
from attune_trainer.contract.errors import InvalidRequest, NotFound
from attune_trainer.contract.schemas import valid_run_id
from attune_trainer.encoding import prompt_ids
from attune_trainer.log import log
from attune_trainer.models import load_causal_lm
from attune_trainer.serving.sampling import Forward, Generated, forward_pass, generate
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.runs import RunRegistry
from attune_trainer.state.snapshot_model import materialised_snapshot_weights, sharded_snapshot
from attune_trainer.state.step_weights import no_weights, step_weights, steps_with_weights

CHECKPOINTS_KEPT_FOR_INFERENCE = 2
DEFAULT_MAX_TOKENS = 512


class Sampler:
    def __init__(self, compute: Compute, runs: RunRegistry):
        self.compute = compute
        self.runs = runs
        self.checkpoint_models: OrderedDict[str, object] = OrderedDict()  # "run@step" -> model, LRU
        # The cache is used with and without the engine lock (sampling beside a step).
        self.checkpoint_models_lock = threading.Lock()

    def resolve_model(self, model: str) -> tuple[str, int | None]:
        """`run` -> (run, None); `run@step` -> (run, step) for a committed checkpoint."""
        run_id, _, step_text = model.partition("@")
        if not valid_run_id(run_id):
            raise InvalidRequest(
                "model",
                f"model {model[:200]!r}: expected a run id or run@step (a run id is letters, digits, '.', '_', "
                "'-', starting with a letter or digit, at most 128 characters)",
            )
        store = self.runs.store(run_id)
        if not store.exists():
            raise NotFound(f"model {model!r}: run {run_id!r} not found", field="model")
        if step_text == "":
            return run_id, None
        try:
            step = int(step_text)
        except ValueError:
            raise InvalidRequest("model", f"model {model!r}: the part after '@' must be a step number") from None
        current = store.last_applied_step()
        if step != current and step_weights(store, step) is None and sharded_snapshot(store, step) is None:
            error = no_weights(store, step, "model", current=current)
            raise NotFound(f"model {model!r}: {error.message}", field="model", **error.details)
        return run_id, step

    def _checkpoint_model(self, run: LoadedRun, step: int):
        with self.checkpoint_models_lock:
            return self._load_checkpoint_model(run, step)

    def _load_checkpoint_model(self, run: LoadedRun, step: int):
        key = f"{run.run_id}@{step}"
        if key in self.checkpoint_models:
            self.checkpoint_models.move_to_end(key)
            return self.checkpoint_models[key]
        # a step whose only weights are a sharded snapshot: its model directory is made once, as its export
        weights = step_weights(run.store, step) or materialised_snapshot_weights(run.store, step)
        if weights is None:
            error = no_weights(run.store, step, "model", current=run.step)
            raise NotFound(f"model {key!r}: {error.message}", field="model", **error.details)
        frozen_dtype = self.compute.frozen_dtype
        if run.lora is not None:
            from peft import PeftModel

            base = load_causal_lm(run.base_path, frozen_dtype)
            model = PeftModel.from_pretrained(base, weights["path"])
        else:
            model = load_causal_lm(Path(weights["path"]), frozen_dtype)
        model.to(self.compute.device).eval()
        self.checkpoint_models[key] = model
        while len(self.checkpoint_models) > CHECKPOINTS_KEPT_FOR_INFERENCE:
            self.checkpoint_models.popitem(last=False)
        return model

    def _forward_on(self, run: LoadedRun, step: int, live: bool) -> Forward:
        """Each token's forward pass on the weights of `run@step`, holding the engine lock for that
        token only when they are the live weights. A step applied between two tokens moves the live
        weights on: the reply then continues on the step's checkpoint, which holds the same weights,
        so it keeps the cache built so far. Rebuilding the cache in one pass would change the
        log-probs in their last bits, and then by where the step happened to land: timing."""
        compute = self.compute
        current = {"model": run.policy if live else self._checkpoint_model(run, step), "live": live}

        def forward(ids, past):
            # A checkpoint's own copy of the weights: no step changes it, so sampling it runs alongside
            # a step (the rollouts of the next step while this one trains) instead of waiting for it.
            if not current["live"]:
                return forward_pass(current["model"], ids, past, compute.acc.autocast)
            with self.runs.lock.token():
                if current["live"] and not (self.runs.loaded.get(run.run_id) is run and run.step == step):
                    checkpoint = self._checkpoint_model(run, step)
                    if not _same_dtype(checkpoint, current["model"]):
                        past = None  # a cache in the live weights' precision does not fit the copy
                    current.update(model=checkpoint, live=False)
                return forward_pass(current["model"], ids, past, compute.acc.autocast)

        return forward

    def _prepare(self, run: LoadedRun, request, step: int, live: bool) -> tuple[list[int], int, int, Forward]:
        """The prompt's ids, the model's context, the completion's token budget and the forward pass."""
        prompt = prompt_ids(run.tokenizer, request.messages, "messages")
        context = getattr(self.compute.unwrap(run.policy).config, "max_position_embeddings", 4096) or 4096
        return prompt, context, _max_tokens(request, run.hp.max_length), self._forward_on(run, step, live)

    def chat(self, req: dict) -> dict:
        from attune_trainer.contract.schemas import ChatCompletionRequest

        request = ChatCompletionRequest.model_validate(req)
        if request.stream:
            raise InvalidRequest("stream", "stream: streaming is not supported by the trainer; set stream=false")
        run_id, step = self.resolve_model(request.model)
        beside = self.runs.loaded.get(run_id) if step is not None and self.runs.lock.held_whole_by_another() else None
        if beside is not None and step_weights(beside.store, step) is None:
            beside = None  # only the live weights have it (if the step holding the engine has not moved them)
        with ExitStack() as reply:
            if beside is not None:
                # A step (or a load) holds the engine: a committed checkpoint is sampled from its own copy
                # of the weights beside it, as the rollouts of the next step do while this one trains.
                run, used_step, live = beside, step, False
                prompt, context, max_tokens, forward = self._prepare(run, request, used_step, live)
            else:
                with self.runs.lock:
                    run = self.runs.ensure_loaded(run_id)
                    used_step = run.step if step is None else step
                    live = used_step == run.step
                    prompt, context, max_tokens, forward = self._prepare(run, request, used_step, live)
                    if live:  # registered under the lock: a step that changes these weights exports them first
                        reply.enter_context(self.runs.live_reply(run_id, used_step))
            return self._generate(run, request, step, used_step, live, prompt, context, max_tokens, forward)

    def _generate(self, run, request, step, used_step, live, prompt, context, max_tokens, forward) -> dict:
        compute = self.compute
        run_id = run.run_id
        collective = live and compute.world > 1
        tokenizer = run.tokenizer
        room = context - len(prompt)
        if room < 1:
            raise InvalidRequest(
                "messages",
                f"messages: the prompt has {len(prompt)} tokens, more than the model's context of {context}",
            )
        stop = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
        t0 = time.time()
        # outside the lock: `forward` takes it for one token at a time
        choices, n_generated = generate(
            forward,
            tokenizer,
            prompt,
            n=request.n,
            max_tokens=min(max_tokens, room),
            temperature=1.0 if request.temperature is None else request.temperature,
            top_p=1.0 if request.top_p is None else request.top_p,
            seed=request.seed,
            stop=stop,
            eos_ids=run.eos_ids,
            device=compute.device,
            broadcast=compute.broadcast_from_main if collective else None,
        )
        log(
            "info",
            "chat completion",
            model=request.model,
            step=used_step,
            n=request.n,
            prompt_tokens=len(prompt),
            completion_tokens=n_generated,
            seconds=round(time.time() - t0, 3),
        )
        model = f"{run_id}@{used_step}" if step is not None else run_id
        return _completion(request, model, f"{run_id}@{used_step}", tokenizer, choices, len(prompt), n_generated)

    def models(self) -> list[dict]:
        out = []
        for run_id in self.runs.list_runs():
            store = self.runs.store(run_id)
            created = int(store.read_meta().get("created") or 0)
            out.append({"id": run_id, "object": "model", "created": created, "owned_by": "attune-trainer"})
            current = store.last_applied_step()
            for step in sorted({*steps_with_weights(store), current}):
                out.append(
                    {
                        "id": f"{run_id}@{step}",
                        "object": "model",
                        "created": created,
                        "owned_by": "attune-trainer",
                        "parent": run_id,
                    }
                )
        return out


def _same_dtype(a, b) -> bool:
    return next(a.parameters()).dtype == next(b.parameters()).dtype


def _logprobs(tokenizer, choice: Generated, as_token_ids: bool | None) -> dict:
    """OpenAI's `choices[i].logprobs`, one entry per sampled token; with `return_tokens_as_token_ids`
    (vLLM's convention) each token is written `token_id:N`, so a client gets the exact ids."""
    content = []
    for token_id, logprob in zip(choice.token_ids, choice.logprobs, strict=True):
        text = tokenizer.decode([token_id])
        content.append(
            {
                "token": f"token_id:{token_id}" if as_token_ids else text,
                "logprob": logprob,
                "bytes": list(text.encode("utf-8")),
                "top_logprobs": [],
            }
        )
    return {"content": content, "refusal": None}


def _max_tokens(request, max_length: int) -> int:
    """The completion budget asked for, refused above the run's max_length (prompt + completion)."""
    field = "max_completion_tokens" if request.max_completion_tokens is not None else "max_tokens"
    asked = request.max_completion_tokens if request.max_completion_tokens is not None else request.max_tokens
    if asked is None:
        return min(DEFAULT_MAX_TOKENS, max_length)
    if asked > max_length:
        raise InvalidRequest(field, f"{field}: {asked} is more than the run's max_length ({max_length} tokens)")
    return asked


def _completion(request, model: str, fingerprint: str, tokenizer, choices, n_prompt: int, n_generated: int) -> dict:
    """The OpenAI chat-completion body for the generated choices."""
    created = int(time.time())
    completion_id = "chatcmpl-" + hashlib.sha256(f"{request.model}{created}{time.time_ns()}".encode()).hexdigest()[:24]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": choice.text, "refusal": None},
                "logprobs": _logprobs(tokenizer, choice, request.return_tokens_as_token_ids)
                if request.logprobs
                else None,
                "finish_reason": choice.finish_reason,
            }
            for i, choice in enumerate(choices)
        ],
        "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_generated, "total_tokens": n_prompt + n_generated},
    }
