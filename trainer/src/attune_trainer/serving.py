"""Sampling from a run's policy over the OpenAI chat API (`run` or `run@step`), and the model list.

A mixin of `Engine`: it uses the engine's loaded runs, lock, device and accelerator, and keeps a
small cache of earlier checkpoints loaded for inference.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .errors import ApiError
from .log import log
from .models import load_causal_lm

if TYPE_CHECKING:
    from .engine import LoadedRun


class Serving:
    def resolve_model(self, model: str) -> tuple[str, int | None]:
        run_id, _, step_s = model.partition("@")
        store = self.run_store(run_id)
        if not store.exists():
            raise ApiError(404, f"model {model!r}: run {run_id!r} not found", "not_found_error", field="model")
        if step_s == "":
            return run_id, None
        try:
            step = int(step_s)
        except ValueError:
            raise ApiError(422, f"model {model!r}: the part after '@' must be a step number", field="model") from None
        if step not in store.committed_steps():
            raise ApiError(
                404,
                f"model {model!r}: run {run_id!r} has no checkpoint for step {step} "
                f"(available: {store.committed_steps()})",
                "not_found_error",
                field="model",
            )
        return run_id, step

    def _inference_model(self, lr: LoadedRun, step: int):
        key = f"{lr.run_id}@{step}"
        if key in self.infer_cache:
            self.infer_cache.move_to_end(key)
            return self.infer_cache[key]
        d = lr.store.ckpt(step)
        if lr.lora is not None:
            from peft import PeftModel

            base = load_causal_lm(lr.base_path, self.frozen_dtype)
            m = PeftModel.from_pretrained(base, str(d / "policy"))
        else:
            exp = lr.store.export_info(step)
            m = load_causal_lm(Path(exp["path"]), self.frozen_dtype)
        m.to(self.device).eval()
        self.infer_cache[key] = m
        while len(self.infer_cache) > 2:
            self.infer_cache.popitem(last=False)
        return m

    def chat(self, req: dict) -> dict:
        from .sampling import generate
        from .schemas import ChatCompletionRequest

        cr = ChatCompletionRequest.model_validate(req)
        if cr.stream:
            raise ApiError(422, "stream: streaming is not supported by the trainer; set stream=false", field="stream")
        run_id, step = self.resolve_model(cr.model)
        with self.lock:
            lr = self.ensure_loaded(run_id)
            if step is None or step == lr.step:
                model, collective = lr.policy, True
                used_step = lr.step
            else:
                model, collective = self._inference_model(lr, step), False
                used_step = step
            tok = lr.tokenizer
            msgs = [{"role": m.role, "content": m.text()} for m in cr.messages]
            text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            prompt_ids = tok(text, add_special_tokens=False)["input_ids"]
            max_pos = getattr(self.acc.unwrap_model(lr.policy).config, "max_position_embeddings", 4096) or 4096
            room = max_pos - len(prompt_ids)
            if room < 1:
                raise ApiError(
                    422,
                    f"messages: the prompt has {len(prompt_ids)} tokens, more than the model's context of {max_pos}",
                    field="messages",
                )
            max_tokens = cr.max_completion_tokens or cr.max_tokens or 512
            max_tokens = min(max_tokens, room)
            stop = [cr.stop] if isinstance(cr.stop, str) else list(cr.stop or [])
            t0 = time.time()
            choices, n_gen = generate(
                model,
                tok,
                prompt_ids,
                n=cr.n,
                max_tokens=max_tokens,
                temperature=1.0 if cr.temperature is None else cr.temperature,
                top_p=1.0 if cr.top_p is None else cr.top_p,
                seed=cr.seed,
                stop=stop,
                eos_ids=lr.eos_ids,
                device=self.device,
                autocast=self.acc.autocast,
                broadcast=self._broadcast_tokens if (collective and self.world > 1) else None,
            )
        created = int(time.time())
        rid = "chatcmpl-" + hashlib.sha256(f"{cr.model}{created}{time.time_ns()}".encode()).hexdigest()[:24]
        log(
            "info",
            "chat completion",
            model=cr.model,
            step=used_step,
            n=cr.n,
            prompt_tokens=len(prompt_ids),
            completion_tokens=n_gen,
            seconds=round(time.time() - t0, 3),
        )
        return {
            "id": rid,
            "object": "chat.completion",
            "created": created,
            "model": f"{run_id}@{used_step}" if step is not None else run_id,
            "system_fingerprint": f"{run_id}@{used_step}",
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": text_, "refusal": None},
                    "logprobs": None,
                    "finish_reason": fr,
                }
                for i, (text_, fr) in enumerate(choices)
            ],
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": n_gen,
                "total_tokens": len(prompt_ids) + n_gen,
            },
        }

    def _broadcast_tokens(self, t: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        t = t.to(self.device)
        dist.broadcast(t, src=0)
        return t

    def models(self) -> list[dict]:
        out = []
        for rid in self.list_runs():
            store = self.run_store(rid)
            created = int(store.read_meta().get("created") or 0)
            out.append({"id": rid, "object": "model", "created": created, "owned_by": "attune-trainer"})
            for s in store.committed_steps():
                out.append(
                    {
                        "id": f"{rid}@{s}",
                        "object": "model",
                        "created": created,
                        "owned_by": "attune-trainer",
                        "parent": rid,
                    }
                )
        return out
