"""Per-token (log p, entropy) of a micro-batch's (B, T, V) logits, a slice of positions at a time.

`losses.token_logprobs` on the whole micro-batch keeps an fp32 copy of the logits and the softmax
(both B x T x V) for backward, and its backward adds a few more fp32 tensors of that size: 2.4 GB
each at B=4, T=3072, V=49152 (7.5 GB at a 152k vocabulary). Here forward computes one slice of
positions at a time without a graph and keeps only the logits; backward recomputes each slice's
fp32 maths, differentiates it with autograd (the same kernels as on the whole tensor) and writes the
slice's gradient over the slice's logits, which are not needed again. Besides the logits (then their
gradient, in the model's dtype), the memory is a few fp32 tensors of one slice, bounded by `CHUNK_BYTES`.

Every position goes through the same per-row kernels as on the whole tensor, so log-probs, entropies
and gradients are bit-identical to the unchunked computation (tests check it).
"""

from __future__ import annotations

import torch

from attune_trainer.update.losses import token_logprobs as dense_token_logprobs

# One fp32 (B, chunk, V) tensor of a slice is at most this big (at least one position per slice): 85
# positions at B=4 and V=49152, 27 at Qwen's 152k vocabulary. A slice's backward holds about five such
# tensors at once, so this bounds the extra memory near 320 MiB; larger slices buy little (the per-slice
# cost is a few kernel launches, next to 64 MiB of memory traffic per op), and at 256 MiB the slices'
# temporaries outweighed a logits copy at moderate sequence lengths (bench/trainer/logit_memory.py).
CHUNK_BYTES = 64 * 2**20


def positions_per_chunk(batch: int, vocab: int) -> int:
    """How many positions a slice holds so that one fp32 (batch, chunk, vocab) tensor fits `CHUNK_BYTES`."""
    return max(1, CHUNK_BYTES // (max(1, batch) * max(1, vocab) * 4))


def _slices(n: int, chunk: int) -> list[slice]:
    return [slice(start, min(start + chunk, n)) for start in range(0, n, chunk)]


class _ChunkedLogprobs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, temperature, chunk):
        ctx.set_materialize_grads(False)  # an output without gradient adds nothing (not zeros)
        ctx.save_for_backward(logits, targets)
        ctx.temperature, ctx.chunk = temperature, chunk
        return _without_graph(logits, targets, temperature, chunk)

    @staticmethod
    def backward(ctx, grad_logp, grad_entropy):
        logits, targets = ctx.saved_tensors
        n = targets.shape[1]
        # A slice's logits are not read again once its gradient is known: that gradient takes their place,
        # saving a logits-sized tensor (a leaf keeps its values: its gradient is user-visible).
        grad = logits.detach() if logits.grad_fn is not None else torch.empty_like(logits)
        grad[:, n:] = 0  # positions past the last target (the model's prediction after the input)
        for part in _slices(n, ctx.chunk):
            piece = logits[:, part].detach().requires_grad_()
            with torch.enable_grad():
                logp, entropy = dense_token_logprobs(piece, targets[:, part], ctx.temperature)
            pairs = [(out, g[:, part]) for out, g in ((logp, grad_logp), (entropy, grad_entropy)) if g is not None]
            (piece_grad,) = torch.autograd.grad([o for o, _ in pairs], piece, [g for _, g in pairs])
            grad[:, part] = piece_grad
        return grad, None, None, None


def _without_graph(logits, targets, temperature, chunk) -> tuple[torch.Tensor, torch.Tensor]:
    parts = []
    with torch.no_grad():
        for part in _slices(targets.shape[1], chunk):
            parts.append(dense_token_logprobs(logits[:, part], targets[:, part], temperature))
    if not parts:  # no positions
        empty = logits.new_zeros(targets.shape, dtype=torch.float32)
        return empty, empty.clone()
    return torch.cat([p[0] for p in parts], dim=1), torch.cat([p[1] for p in parts], dim=1)


def token_logprobs(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0, chunk: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and entropy per position (B, T), as `losses.token_logprobs`, `chunk` positions at a
    time (default: `positions_per_chunk`).

    `logits` may have more positions than `targets` (the model's own output, whose last position predicts
    past the input): the extra trailing ones are ignored and get a zero gradient. Passing them rather
    than slicing them off saves a logits-sized zero gradient that slicing's backward would allocate.

    Backward overwrites computed (non-leaf) `logits` with their gradient: read them before it, not after.
    Anything else that saved them for backward would fail loudly there (autograd's version check)."""
    B, T = targets.shape
    if logits.shape[:1] != (B,) or logits.shape[1] < T:
        raise ValueError(f"logits {tuple(logits.shape)} do not cover targets {tuple(targets.shape)}")
    chunk = chunk or positions_per_chunk(B, logits.shape[-1])
    if torch.is_grad_enabled() and logits.requires_grad:
        return _ChunkedLogprobs.apply(logits, targets, temperature, chunk)
    return _without_graph(logits, targets, temperature, chunk)
