"""What the update needs from the weights before it changes them ("old" = PPO's proximal policy): the
per-sample tensors, how a micro-batch's policy log-probs fill them, and when the training forward
itself can supply those log-probs instead of a separate no-grad pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from attune_trainer.contract.schemas import Hyperparameters, Sample
from attune_trainer.update.off_policy import applied_weights, raw_weights
from attune_trainer.update.sampler_gap import sample_gaps

DROPOUT_MODULES = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)


@dataclass
class OldOutputs:
    """Per-sample tensors over completion tokens, from the weights before the update."""

    logp: dict[int, torch.Tensor] = field(default_factory=dict)
    ref_logp: dict[int, torch.Tensor] = field(default_factory=dict)
    values: dict[int, torch.Tensor] = field(default_factory=dict)
    # |sampler - trainer| log-prob per completion token, for samples that carry the sampler's
    sampler_gaps: dict[int, torch.Tensor] = field(default_factory=dict)
    # importance weights of the off-policy correction: before truncation (samples with sampler
    # log-probs, for the metrics) and as applied to the policy loss (every sample)
    raw_is_weights: dict[int, torch.Tensor] = field(default_factory=dict)
    is_weights: dict[int, torch.Tensor] = field(default_factory=dict)

    def record_policy(
        self,
        samples: list[Sample],
        indices: list[int],
        mask: torch.Tensor,
        logp: torch.Tensor,
        raw_logp: torch.Tensor,
        is_truncation: float,
        device,
    ) -> None:
        """One micro-batch's old log-probs (at the training temperature) and what derives from the
        raw (temperature 1) ones: the gap to the sampler and the importance weights."""
        for row, i in enumerate(indices):
            completion = mask[row] > 0
            self.logp[i] = logp[row][completion].detach()
            raw = raw_logp[row][completion].detach()
            gaps = sample_gaps(samples[i], raw)
            if gaps is not None:
                self.sampler_gaps[i] = gaps
            weights = raw_weights(samples[i], raw)
            if weights is not None:
                self.raw_is_weights[i] = weights
            self.is_weights[i] = applied_weights(weights, int(completion.sum()), is_truncation, device)


def needs_raw_logprobs(hp: Hyperparameters, samples: list[Sample], indices: list[int]) -> bool:
    """Whether a micro-batch needs log-probs at temperature 1 besides the training ones: the sampler
    reports the raw distribution, so the gap and the importance weights compare with that."""
    return hp.temperature != 1.0 and any(samples[i].completion_logprobs is not None for i in indices)


def old_logprobs_from_training(hp: Hyperparameters, n_samples: int, policy: nn.Module) -> bool:
    """True when each micro-batch's training forward gives exactly the old log-probs, so the separate
    no-grad pass can be skipped: one epoch over one mini-batch is a single optimizer step (gradients
    accumulate over the micro-batches), so the weights cannot change before any training forward,
    and without dropout a training forward computes what an eval one does."""
    single_update = hp.ppo_epochs == 1 and (hp.mini_batch_size or n_samples) >= n_samples
    return single_update and not has_dropout(policy)


def has_dropout(model: nn.Module) -> bool:
    """A dropout module with a rate above 0 (e.g. LoRA's), or a dropout rate in the model's config
    (Llama's attention dropout is a rate, not a module)."""
    if any(isinstance(m, DROPOUT_MODULES) and m.p > 0 for m in model.modules()):
        return True
    config = getattr(model, "config", None)
    settings = config.to_dict() if hasattr(config, "to_dict") else {}
    return any(
        ("dropout" in key or "pdrop" in key) and isinstance(value, int | float) and value > 0
        for key, value in settings.items()
    )
