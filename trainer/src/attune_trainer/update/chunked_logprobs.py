"""Per-token (log p, entropy) of a micro-batch's (B, T, V) logits, a slice of positions at a time.

`losses.token_logprobs` on the whole micro-batch keeps an fp32 copy of the logits and the softmax
(both B x T x V) for backward, and backward adds a few more fp32 tensors of that size: 2.4 GB each
at B=4, T=3072, V=49152 (7.5 GB at a 152k vocabulary). Here the logits are split along the
sequence (`torch.split`, one backward node) and each slice's fp32 maths runs under a non-reentrant
activation checkpoint: nothing of it is saved for backward, which recomputes the slice's
temporaries when it reaches them. The extra memory is then a few fp32 tensors of one slice,
O(B x chunk x V), bounded by `CHUNK_BYTES`, besides the logits the model returned.

Every position's values are computed by the same per-row kernels as on the whole tensor, so log-probs,
entropies and gradients are bit-identical to the unchunked computation (tests check it).
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

from attune_trainer.update.losses import token_logprobs as dense_token_logprobs

# One fp32 (B, chunk, V) tensor of a slice is at most this big (at least one position per slice):
# 341 positions at B=4 and V=49152, 110 at Qwen's 152k vocabulary. Small enough that the slice's few
# fp32 temporaries are far below the logits themselves, large enough that the per-slice overhead (one
# kernel launch per op, the recompute bookkeeping) is negligible next to the B x chunk x V maths.
CHUNK_BYTES = 256 * 2**20


def positions_per_chunk(batch: int, vocab: int) -> int:
    """How many positions a slice holds so that one fp32 (batch, chunk, vocab) tensor fits `CHUNK_BYTES`."""
    return max(1, CHUNK_BYTES // (max(1, batch) * max(1, vocab) * 4))


def token_logprobs(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0, chunk: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and entropy per position (B, T), as `losses.token_logprobs`, `chunk` positions at a
    time (default: `positions_per_chunk`)."""
    B, T, V = logits.shape
    chunk = chunk or positions_per_chunk(B, V)
    if T <= chunk:
        return dense_token_logprobs(logits, targets, temperature)
    keep_graph = torch.is_grad_enabled() and logits.requires_grad
    parts = []
    for piece, piece_targets in zip(logits.split(chunk, dim=1), targets.split(chunk, dim=1), strict=True):
        if keep_graph:
            # no RNG in the maths: nothing to stash and restore for the recompute
            parts.append(
                checkpoint(
                    dense_token_logprobs,
                    piece,
                    piece_targets,
                    temperature,
                    use_reentrant=False,
                    preserve_rng_state=False,
                )
            )
        else:
            parts.append(dense_token_logprobs(piece, piece_targets, temperature))
    logp = torch.cat([p[0] for p in parts], dim=1)
    entropy = torch.cat([p[1] for p in parts], dim=1)
    return logp, entropy
