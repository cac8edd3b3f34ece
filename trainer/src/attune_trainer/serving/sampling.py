"""Token sampling with a KV cache: temperature, top_p, max_tokens, seed, stop strings, n choices.

Each choice keeps the token ids it sampled and their log-probabilities under the raw model
distribution (before temperature and top_p, as vLLM reports them), so a trainer can train on
exactly those tokens and compare its own log-probabilities with the sampler's.

The caller supplies the forward pass (`Forward`), so it can hold the engine lock for one token at a
time and choose the weights for each token. Stop strings are checked on text decoded incrementally:
each token decodes a short window, so a reply costs linear, not quadratic, decoding work.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

# (all token ids so far, n x L; the cache from the previous call or None) -> (last logits on the CPU, cache)
Forward = Callable[[torch.Tensor, Any], tuple[torch.Tensor, Any]]


def forward_pass(model, ids: torch.Tensor, past, autocast: Callable = contextlib.nullcontext):
    """One decoding step: the whole sequence when there is no cache yet, else its last token."""
    was_training = model.training
    if was_training:
        model.eval()
    try:
        with torch.no_grad(), autocast():
            out = model(
                input_ids=ids if past is None else ids[:, -1:],
                attention_mask=torch.ones_like(ids),
                past_key_values=past,
                use_cache=True,
            )
    finally:
        if was_training:
            model.train()
    return out.logits[:, -1, :].float().cpu(), out.past_key_values


class IncrementalText:
    """The text of a growing token list, decoding only the tokens since the last complete character.

    Decoding from a small prefix window (not the single new token) keeps tokenizers that drop a
    word's leading space at the start of a decode correct; a trailing U+FFFD means a multi-byte
    character is not complete yet, so nothing is emitted until it is."""

    def __init__(self, tok):
        self.tok = tok
        self.ids: list[int] = []
        self.text = ""
        self._prefix = 0  # start of the decode window
        self._read = 0  # tokens already turned into text

    def append(self, token_id: int) -> str:
        self.ids.append(token_id)
        before = self.tok.decode(self.ids[self._prefix : self._read], skip_special_tokens=True)
        after = self.tok.decode(self.ids[self._prefix :], skip_special_tokens=True)
        if len(after) <= len(before) or after.endswith("\ufffd"):
            return ""
        new = after[len(before) :]
        self.text += new
        self._prefix, self._read = self._read, len(self.ids)
        return new


def find_stop(text: str, new: str, stop: list[str]) -> int:
    """Where the first stop string that `new` completed starts in `text` (which ends with `new`), or -1.

    Only the new characters and the longest stop string's length before them can hold a stop string
    that was not there before, so only that tail is searched."""
    longest = max((len(s) for s in stop), default=0)
    start = max(0, len(text) - len(new) - longest + 1)
    tail = text[start:]
    hits = [tail.find(s) for s in stop if s and s in tail]
    return start + min(hits) if hits else -1


def _filter_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    if top_p >= 1.0:
        return probs
    sorted_p, idx = torch.sort(probs, descending=True, dim=-1)
    cum = torch.cumsum(sorted_p, dim=-1)
    remove = (cum - sorted_p) > top_p  # keep the smallest prefix whose mass reaches top_p
    sorted_p = sorted_p.masked_fill(remove, 0.0)
    out = torch.zeros_like(probs).scatter(-1, idx, sorted_p)
    return out / out.sum(-1, keepdim=True)


@dataclass
class Generated:
    """One choice: its text, why it ended, and the sampled ids with their log-probabilities. The ids
    include the end-of-turn token when one was sampled, and the token that completed a stop string."""

    text: str
    finish_reason: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


def generate(
    forward: Forward,
    tok,
    prompt_ids: list[int],
    n: int,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    stop: list[str],
    eos_ids: list[int],
    device,
    broadcast: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[list[Generated], int]:
    """Return (one `Generated` per choice, completion tokens generated in total).

    With `broadcast` (multi-rank), rank 0's token choices are sent to every rank so all ranks run
    the same number of forward passes (FSDP needs that)."""
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(seed) % (2**64) if seed is not None else int.from_bytes(os.urandom(8), "little") % (2**63))
    ids = torch.tensor([prompt_ids] * n, dtype=torch.long, device=device)
    texts = [IncrementalText(tok) for _ in range(n)]
    finished: list[str | None] = [None] * n  # finish_reason per row
    cut: list[str | None] = [None] * n  # set when a stop string cut the text
    sampled: list[list[int]] = [[] for _ in range(n)]
    sampled_logprobs: list[list[float]] = [[] for _ in range(n)]
    eos = set(int(e) for e in eos_ids)
    stop = [s for s in stop if s]
    past = None
    total = 0
    for _ in range(max_tokens):
        logits, past = forward(ids, past)
        if temperature <= 0:
            nxt = torch.argmax(logits, dim=-1)
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
            probs = _filter_top_p(probs, top_p)
            nxt = torch.multinomial(probs, 1, generator=gen).squeeze(-1)
        if broadcast is not None:
            nxt = broadcast(nxt.to(device)).cpu()
        chosen_logprobs = torch.log_softmax(logits.float(), dim=-1).gather(-1, nxt.view(-1, 1)).squeeze(-1)
        for r in range(n):
            if finished[r] is not None:
                continue
            t = int(nxt[r])
            total += 1
            sampled[r].append(t)
            sampled_logprobs[r].append(float(chosen_logprobs[r]))
            if t in eos:
                finished[r] = "stop"
                continue
            if stop:
                new = texts[r].append(t)
                at = find_stop(texts[r].text, new, stop) if new else -1
                if at >= 0:
                    cut[r] = texts[r].text[:at]
                    finished[r] = "stop"
            else:
                texts[r].ids.append(t)
        if all(f is not None for f in finished):
            break
        ids = torch.cat([ids, nxt.to(device).unsqueeze(-1)], dim=1)
    result = []
    for r in range(n):
        text = cut[r] if cut[r] is not None else tok.decode(texts[r].ids, skip_special_tokens=True)
        result.append(Generated(text, finished[r] or "length", sampled[r], sampled_logprobs[r]))
    return result, total
