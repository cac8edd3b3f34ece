"""Samples as token ids: the prompt through the chat template, the completion after it, padded batches."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attune_trainer.contract.errors import InvalidRequest
from attune_trainer.contract.schemas import ChatMessage, Hyperparameters, Sample


@dataclass
class Encoded:
    ids: list[int]
    n_prompt: int
    # the sampler's ids were used (else the completion text was tokenised here)
    sampled: bool = False

    @property
    def n_completion(self) -> int:
        return len(self.ids) - self.n_prompt


def prompt_ids(tokenizer, messages: list[ChatMessage], field: str) -> list[int]:
    """Messages through the model's chat template with `add_generation_prompt`, as token ids."""
    from jinja2 import TemplateError

    chat = [{"role": m.role, "content": m.text()} for m in messages]
    try:
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    except (TemplateError, ValueError, TypeError) as e:  # e.g. a role the template refuses
        raise InvalidRequest(field, f"{field}: the model's chat template refused these messages: {e}") from None
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def encode_sample(
    tokenizer, sample: Sample, hp: Hyperparameters, eos_id: int, field: str = "samples", vocab_size: int | None = None
) -> Encoded:
    """Prompt rendered with `add_generation_prompt` (as the sampler renders it, `prompt_ids`), then
    the completion: the sampler's own ids when the sample has them, exactly as sampled (the
    end-of-turn token included if it was sampled); else the text tokenised apart and ended by EOS.

    Over `max_length`, the completion is cut at its end and then the prompt at its start.
    """
    prompt = prompt_ids(tokenizer, sample.prompt, field)
    sampled = sample.completion_ids is not None
    if sampled:
        completion = list(sample.completion_ids)
        if vocab_size is not None and any(t >= vocab_size for t in completion):
            bad = next(t for t in completion if t >= vocab_size)
            where = field.rsplit(".", 1)[0] + ".completion_ids"
            raise InvalidRequest(where, f"{where}: token id {bad} is outside the vocabulary (size {vocab_size})")
    else:
        completion = tokenizer(sample.completion, add_special_tokens=False)["input_ids"] if sample.completion else []
        if hp.append_eos:
            completion = completion + [eos_id]
    if len(completion) >= hp.max_length:
        completion = completion[: hp.max_length - 1]
    if len(prompt) + len(completion) > hp.max_length:
        prompt = prompt[-(hp.max_length - len(completion)) :]
    if not prompt:
        prompt = [eos_id]
    return Encoded(ids=list(prompt) + list(completion), n_prompt=len(prompt), sampled=sampled)


def pad_batch(encoded: list[Encoded], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input ids, attention mask, completion mask); the completion mask is shifted by one position
    (position t predicts token t+1), so it lines up with per-token log-probs."""
    width = max(len(e.ids) for e in encoded)
    ids = torch.full((len(encoded), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(encoded), width), dtype=torch.long)
    completion_mask = torch.zeros((len(encoded), width - 1), dtype=torch.float32)
    for i, e in enumerate(encoded):
        ids[i, : len(e.ids)] = torch.tensor(e.ids)
        attention[i, : len(e.ids)] = 1
        completion_mask[i, e.n_prompt - 1 : len(e.ids) - 1] = 1.0
    return ids.to(device), attention.to(device), completion_mask.to(device)
