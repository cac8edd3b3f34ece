"""Token sampling with a KV cache: temperature, top_p, max_tokens, seed, stop strings, n choices."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import torch


def _filter_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    if top_p >= 1.0:
        return probs
    sorted_p, idx = torch.sort(probs, descending=True, dim=-1)
    cum = torch.cumsum(sorted_p, dim=-1)
    remove = (cum - sorted_p) > top_p  # keep the smallest prefix whose mass reaches top_p
    sorted_p = sorted_p.masked_fill(remove, 0.0)
    out = torch.zeros_like(probs).scatter(-1, idx, sorted_p)
    return out / out.sum(-1, keepdim=True)


@torch.no_grad()
def generate(
    model,
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
    autocast: Callable = contextlib.nullcontext,
    broadcast: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[list[tuple[str, str]], int]:
    """Return ([(text, finish_reason)] * n, completion tokens generated in total).

    With `broadcast` (multi-rank), rank 0's token choices are sent to every rank so all ranks run
    the same number of forward passes (FSDP needs that)."""
    was_training = model.training
    model.eval()
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(seed) if seed is not None else int.from_bytes(os.urandom(8), "little") % (2**63))
    ids = torch.tensor([prompt_ids] * n, dtype=torch.long, device=device)
    attn = torch.ones_like(ids)
    out_tokens: list[list[int]] = [[] for _ in range(n)]
    finished = [None] * n  # finish_reason per row
    texts: list = [None] * n  # set when a stop string cut the text
    eos = set(int(e) for e in eos_ids)
    past = None
    cur = ids
    total = 0
    try:
        for _ in range(max_tokens):
            with autocast():
                out = model(input_ids=cur, attention_mask=attn, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[:, -1, :].float().cpu()
            if temperature <= 0:
                nxt = torch.argmax(logits, dim=-1)
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                probs = _filter_top_p(probs, top_p)
                nxt = torch.multinomial(probs, 1, generator=gen).squeeze(-1)
            if broadcast is not None:
                nxt = broadcast(nxt.to(device)).cpu()
            for r in range(n):
                if finished[r] is not None:
                    continue
                t = int(nxt[r])
                total += 1
                if t in eos:
                    finished[r] = "stop"
                    continue
                out_tokens[r].append(t)
                if stop:
                    text = tok.decode(out_tokens[r], skip_special_tokens=True)
                    cut = min((text.find(s) for s in stop if s and s in text), default=-1)
                    if cut >= 0:
                        texts[r] = text[:cut]
                        finished[r] = "stop"
            if all(f is not None for f in finished):
                break
            cur = nxt.to(device).unsqueeze(-1)
            attn = torch.cat([attn, torch.ones_like(cur)], dim=1)
    finally:
        if was_training:
            model.train()
    result = []
    for r in range(n):
        text = texts[r] if texts[r] is not None else tok.decode(out_tokens[r], skip_special_tokens=True)
        result.append((text, finished[r] or "length"))
    return result, total
