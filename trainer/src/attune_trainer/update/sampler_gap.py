"""How far the trainer's log-probabilities are from the sampler's, on the tokens the sampler chose.

Before the update the trainer holds the weights the samples were drawn from, so on the same tokens
the two should agree up to numerics (about 0 in fp32): a large gap means different tokens, a
different prompt rendering, or different weights. Also which samples were trained on the sampler's
own ids and which on re-tokenised text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import torch

from attune_trainer.contract.schemas import Sample
from attune_trainer.encoding import Encoded


def completion_ids_sha256(ids: list[int]) -> str:
    """SHA-256 of the ids written as decimal numbers joined by commas (the orchestrator's tests hash
    the sampled ids the same way to check the trainer trained on exactly them)."""
    return hashlib.sha256(",".join(str(t) for t in ids).encode()).hexdigest()


def sample_gaps(sample: Sample, trainer_logp: torch.Tensor) -> torch.Tensor | None:
    """|sampler - trainer| per completion token the two share (a completion cut to `max_length`
    compares its kept prefix), or None without sampler log-probs."""
    if sample.completion_logprobs is None:
        return None
    n = min(len(sample.completion_logprobs), int(trainer_logp.numel()))
    sampler = torch.tensor(sample.completion_logprobs[:n], dtype=torch.float64)
    return (sampler - trainer_logp[:n].detach().double().cpu()).abs()


def gap_report(
    samples: list[Sample],
    encoded: list[Encoded],
    gaps: dict[int, torch.Tensor],
    all_reduce: Callable[[torch.Tensor], torch.Tensor],
) -> tuple[dict, list[dict]]:
    """(step metrics, one record per sample). `gaps` holds this rank's samples with sampler
    log-probs; the per-sample maxima and the sums are combined over ranks."""
    n = len(samples)
    # per sample: [max gap, has a gap, sum of gaps, tokens compared]
    table = torch.zeros((n, 4), dtype=torch.float64)
    for i, gap in gaps.items():
        if gap.numel() > 0:
            table[i] = torch.tensor([float(gap.max()), 1.0, float(gap.sum()), float(gap.numel())], dtype=torch.float64)
        else:
            table[i, 1] = 1.0
    table = all_reduce(table).cpu()
    compared = float(table[:, 3].sum())
    measured = table[:, 1] > 0
    metrics = {
        "logprob_gap_mean": float(table[:, 2].sum()) / compared if compared > 0 else None,
        "logprob_gap_max": float(table[measured, 0].max()) if bool(measured.any()) and compared > 0 else None,
        "retokenized_share": sum(1 for e in encoded if not e.sampled) / n if n else 0.0,
    }
    records = [
        {
            "tokens": "sampled" if e.sampled else "retokenized",
            "completion_tokens": e.n_completion,
            "completion_ids_sha256": completion_ids_sha256(e.ids[e.n_prompt :]),
            "logprob_gap_max": float(table[i, 0]) if bool(measured[i]) and table[i, 3] > 0 else None,
        }
        for i, e in enumerate(encoded)
    ]
    return metrics, records
