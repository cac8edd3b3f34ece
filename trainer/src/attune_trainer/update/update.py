"""One PPO/GRPO update of a run from a step's samples, in phases: old log-probs (and reference
log-probs, old values), advantages, policy and critic updates, metrics. See README "The math".

When the step is a single optimizer update, the old log-probs come from the training forward itself
(see `old_outputs.old_logprobs_from_training`) instead of a separate no-grad pass over the policy.

Every loss is a token-mean over all completion tokens of one optimizer update, across micro-batches
and ranks. Each rank works on its own samples (sample i on rank i mod N); a rank with fewer
micro-batches than another runs zero-weight dummy ones, so every rank makes the same collectives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attune_trainer.compute import Compute, inner_optimizer, step_seeds
from attune_trainer.contract.schemas import StepRequest
from attune_trainer.encoding import encode_sample, pad_batch
from attune_trainer.faults import FaultInjection
from attune_trainer.state.loaded_run import LoadedRun
from attune_trainer.state.reference import ensure_reference
from attune_trainer.update import losses
from attune_trainer.update.advantages import AdvantageInputs, Advantages, estimator_for
from attune_trainer.update.algorithms import policy_loss_for
from attune_trainer.update.chunked_logprobs import token_logprobs
from attune_trainer.update.off_policy import staleness, weight_report
from attune_trainer.update.old_outputs import OldOutputs, needs_raw_logprobs, old_logprobs_from_training
from attune_trainer.update.sampler_gap import gap_report

TOKEN_SUMS = (
    "tokens",
    "policy_loss",
    "entropy",
    "kl",
    "clipped",
    "value_loss",
    "value_clipped",
    "advantage",
    "ratio",
    "ppo_kl",
)


@dataclass
class UpdateTotals:
    """Per-token quantities summed over this rank's completion tokens (`TOKEN_SUMS`, float64 on the
    device), grad norms summed over optimizer updates, and the number of updates."""

    token_sums: dict[str, torch.Tensor]
    grad_norm: float = 0.0
    value_grad_norm: float = 0.0
    updates: int = 0

    @classmethod
    def zeros(cls, device) -> UpdateTotals:
        return cls({name: torch.zeros((), dtype=torch.float64, device=device) for name in TOKEN_SUMS})

    def add(self, name: str, per_token: torch.Tensor, mask: torch.Tensor) -> None:
        self.token_sums[name] += (per_token * mask).sum()

    def token_means(self, all_reduce) -> dict[str, float]:
        """Each token sum over all ranks, divided by the number of completion tokens."""
        summed = all_reduce(torch.stack([self.token_sums[name] for name in TOKEN_SUMS]))
        totals = dict(zip(TOKEN_SUMS, summed.tolist(), strict=True))
        n_tokens = max(totals["tokens"], 1.0)
        return {name: value / n_tokens for name, value in totals.items()}


def _pad_like(mask: torch.Tensor, parts: list[torch.Tensor]) -> torch.Tensor:
    out = torch.zeros_like(mask)
    out[mask > 0] = torch.cat(parts).to(out.dtype)
    return out


class PolicyUpdate:
    def __init__(self, compute: Compute, run: LoadedRun, request: StepRequest, faults: FaultInjection):
        self.compute = compute
        self.run = run
        self.faults = faults
        self.step = request.step
        hp = run.hp
        if request.hyperparameters is not None:
            overrides = {k: v for k, v in request.hyperparameters.model_dump().items() if v is not None}
            if overrides:
                hp = hp.model_copy(update=overrides)
        self.hp = hp
        self.samples = request.samples
        tokenizer = run.tokenizer
        eos_id = tokenizer.eos_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_id
        vocab_size = getattr(compute.unwrap(run.policy).config, "vocab_size", None)
        self.encoded = [
            encode_sample(tokenizer, s, hp, eos_id, field=f"samples.{i}.prompt", vocab_size=vocab_size)
            for i, s in enumerate(self.samples)
        ]
        self.trained_samples: list[dict] = []  # what each sample was trained on; set by `apply`
        self.staleness = staleness(self.samples, self.step)
        self.rewards = torch.tensor([s.reward for s in self.samples], dtype=torch.float32)
        self.use_ref = hp.kl_coef > 0
        if self.use_ref:  # the run's settings may have had no KL term: a live override turns it on
            ensure_reference(compute, run)
        self.mine = [i for i in range(len(self.samples)) if i % compute.world == compute.rank]
        # set by `apply`: the training forward records the old log-probs (no separate policy pass)
        self.old_from_training = False

    def _micro_batches(self, indices: list[int]) -> list[list[int]]:
        size = self.hp.micro_batch_size
        return [indices[i : i + size] for i in range(0, len(indices), size)]

    def _batch(self, indices: list[int]):
        return pad_batch([self.encoded[i] for i in indices], self.pad_id, self.compute.device)

    def _logits(self, model, ids, attention):
        """Logits of every position; position t predicts token t+1. The last one, past the input, stays: the
        log-probs ignore it, and slicing it off would cost a logits-sized zero gradient in backward."""
        with self.compute.acc.autocast():
            return model(input_ids=ids, attention_mask=attention, use_cache=False).logits

    def _logprobs(self, model, ids, attention, temperature: float | None = None):
        return token_logprobs(
            self._logits(model, ids, attention), ids[:, 1:], self.hp.temperature if temperature is None else temperature
        )

    def _training_logprobs(self, old: OldOutputs, indices: list[int], real: bool, ids, attention, mask):
        """The policy's training forward: (logp, entropy) with grad. When the update takes the old
        log-probs from it, a real micro-batch records them (detached, so the ratio is exactly 1 with
        the ratio's gradient) and the temperature-1 ones from the same logits."""
        logits = self._logits(self.run.policy, ids, attention)
        targets = ids[:, 1:]
        logp, entropy = token_logprobs(logits, targets, self.hp.temperature)
        if self.old_from_training and real:
            with torch.no_grad():
                raw_logp = logp
                if needs_raw_logprobs(self.hp, self.samples, indices):
                    raw_logp, _ = token_logprobs(logits, targets, 1.0)
            old.record_policy(self.samples, indices, mask, logp, raw_logp, self.hp.is_truncation, self.compute.device)
        return logp, entropy

    def _values(self, ids, attention):
        with self.compute.acc.autocast():
            values = self.run.critic(ids, attention)
        return values[:, :-1].float()

    def apply(self, allow_old_from_training: bool = True) -> dict:
        """Run the phases in order; the run's weights and optimizer states change in memory.

        `allow_old_from_training=False` always makes the separate no-grad pass for the old log-probs
        (tests compare the two ways)."""
        torch.manual_seed(step_seeds(self.run.config["seed"], self.step)["torch"])  # dropout, if any, is reproducible
        self.old_from_training = allow_old_from_training and old_logprobs_from_training(
            self.hp, len(self.samples), self.compute.unwrap(self.run.policy)
        )
        old = self.old_outputs()
        advantages = self.advantages(old)
        totals, policy_lr, value_lr = self.optimise(old, advantages)
        metrics = self.metrics(totals, policy_lr, value_lr)
        gap_metrics, self.trained_samples = gap_report(
            self.samples, self.encoded, old.sampler_gaps, self.compute.all_reduce
        )
        is_metrics = weight_report(
            len(self.samples), old.raw_is_weights, self.hp.is_truncation, self.staleness, self.compute.all_reduce
        )
        return {**metrics, **gap_metrics, **is_metrics}

    # ---------------------------------------------------------------- phase 1: before the update
    def old_outputs(self) -> OldOutputs:
        """Log-probs of the current policy (unless the training forward gives them) and the reference,
        and critic values (no grad)."""
        run = self.run
        old = OldOutputs()
        policy_pass = not self.old_from_training
        if not (policy_pass or self.use_ref or run.critic is not None):
            return old
        run.policy.eval()
        per_rank_max = math.ceil(len(self.samples) / self.compute.world)
        n_micro_batches = math.ceil(per_rank_max / self.hp.micro_batch_size)
        my_batches = self._micro_batches(self.mine)
        with torch.no_grad():
            for b in range(n_micro_batches):
                real = b < len(my_batches)
                indices = my_batches[b] if real else (my_batches[0] if my_batches else [0])
                ids, attention, mask = self._batch(indices)
                if policy_pass:
                    logp, _ = self._logprobs(run.policy, ids, attention)
                    raw_logp = logp
                    if needs_raw_logprobs(self.hp, self.samples, indices):
                        raw_logp, _ = self._logprobs(run.policy, ids, attention, temperature=1.0)
                if self.use_ref:
                    if run.ref is not None:
                        ref_logp, _ = self._logprobs(run.ref, ids, attention)
                    else:
                        with self.compute.unwrap(run.policy).disable_adapter():
                            ref_logp, _ = self._logprobs(run.policy, ids, attention)
                if run.critic is not None:
                    run.critic.eval()
                    values = self._values(ids, attention)
                if not real:
                    continue
                if policy_pass:
                    old.record_policy(
                        self.samples, indices, mask, logp, raw_logp, self.hp.is_truncation, self.compute.device
                    )
                for row, i in enumerate(indices):
                    completion = mask[row] > 0
                    if self.use_ref:
                        old.ref_logp[i] = ref_logp[row][completion].detach()
                    if run.critic is not None:
                        old.values[i] = values[row][completion].detach()
        return old

    # ---------------------------------------------------------------- phase 2: advantages
    def advantages(self, old: OldOutputs) -> Advantages:
        estimate = estimator_for(self.run.config["algorithm"])
        return estimate(
            AdvantageInputs(
                samples=self.samples,
                rewards=self.rewards,
                encoded=self.encoded,
                mine=self.mine,
                old_values=old.values,
                hp=self.hp,
                device=self.compute.device,
                all_reduce=self.compute.all_reduce,
            )
        )

    # ---------------------------------------------------------------- phase 3: policy and critic updates
    def optimise(self, old: OldOutputs, adv: Advantages) -> tuple[UpdateTotals, float, float]:
        """`ppo_epochs` passes over the samples in mini-batches, one optimizer update each.

        Returns the totals and the learning rates used (after warm-up)."""
        run, hp = self.run, self.hp
        n_samples = len(self.samples)
        totals = UpdateTotals.zeros(self.compute.device)
        mini_batch_size = hp.mini_batch_size or n_samples
        policy_lr = losses.warmup_lr(hp.learning_rate, self.step, hp.warmup_steps)
        value_lr = losses.warmup_lr(hp.value_learning_rate, self.step, hp.warmup_steps)
        for group in inner_optimizer(run.policy_opt).param_groups:
            group["lr"] = policy_lr
        if run.critic_opt is not None:
            for group in inner_optimizer(run.critic_opt).param_groups:
                group["lr"] = value_lr
        # gradients left by a failed attempt must not leak into this step
        run.policy_opt.zero_grad(set_to_none=True)
        if run.critic_opt is not None:
            run.critic_opt.zero_grad(set_to_none=True)
        shuffle = torch.Generator().manual_seed(step_seeds(run.config["seed"], self.step)["shuffle"])
        for epoch in range(hp.ppo_epochs):
            order = list(range(n_samples))
            if epoch > 0 or mini_batch_size < n_samples:
                order = torch.randperm(n_samples, generator=shuffle).tolist()
            for start in range(0, n_samples, mini_batch_size):
                self._optimiser_update(order[start : start + mini_batch_size], old, adv, totals)
        run.policy.eval()
        if run.critic is not None:
            run.critic.eval()
        return totals, policy_lr, value_lr

    def _optimiser_update(self, batch: list[int], old: OldOutputs, adv: Advantages, totals: UpdateTotals) -> None:
        """One optimizer update of the policy (and critic) from one mini-batch, over micro-batches."""
        run, hp, compute = self.run, self.hp, self.compute
        mine = [i for i in batch if i % compute.world == compute.rank]
        n_tokens = torch.tensor([float(sum(self.encoded[i].n_completion for i in mine))], device=compute.device)
        n_tokens = float(compute.all_reduce(n_tokens).item())
        rank_max = max(sum(1 for i in batch if i % compute.world == r) for r in range(compute.world))
        n_micro_batches = math.ceil(rank_max / hp.micro_batch_size) if rank_max else 0
        if n_tokens == 0 or n_micro_batches == 0:
            return
        my_batches = self._micro_batches(mine)
        policy_loss = policy_loss_for(run.config["algorithm"])
        run.policy.train()
        if run.critic is not None:
            run.critic.train()
        for b in range(n_micro_batches):
            real = b < len(my_batches)
            indices = my_batches[b] if real else (my_batches[0] if my_batches else [self.mine[0] if self.mine else 0])
            # the token-mean over the whole update, across ranks (gradients are averaged over ranks)
            scale = (1.0 if real else 0.0) * compute.world / n_tokens
            self._micro_batch_backward(indices, real, scale, policy_loss, old, adv, totals)
        if totals.updates > 0:
            self.faults.fire("during_update", self.step)
        self._step_optimisers(totals)

    def _micro_batch_backward(
        self, indices: list[int], real: bool, scale: float, policy_loss, old: OldOutputs, adv: Advantages, totals
    ) -> None:
        """Gradients of one micro-batch's policy (and critic) loss, scaled to the update's token mean; a
        real micro-batch's token sums go into `totals` (a dummy one runs the same collectives, loss zero)."""
        run, hp, compute = self.run, self.hp, self.compute
        ids, attention, mask = self._batch(indices)
        logp, entropy = self._training_logprobs(old, indices, real, ids, attention, mask)
        if real or indices[0] in old.logp:
            old_logp = _pad_like(mask, [old.logp[i] for i in indices])
            advantage = _pad_like(mask, [adv.advantages[i] for i in indices])
            is_weight = _pad_like(mask, [old.is_weights[i] for i in indices])
        else:  # a dummy micro-batch on a rank without samples: zero loss, same collectives
            old_logp, advantage, is_weight = logp.detach(), torch.zeros_like(logp), torch.ones_like(logp)
        pg, ratio, clipped = policy_loss(logp, old_logp, advantage, hp)
        pg = pg * is_weight  # decoupled PPO: behaviour (sampler) -> proximal (before the update)
        loss_per_token = pg - hp.entropy_coef * entropy
        if self.use_ref:
            ref_logp = (
                _pad_like(mask, [old.ref_logp[i] for i in indices])
                if (real or indices[0] in old.ref_logp)
                else logp.detach()
            )
            kl = losses.kl_k3(logp, ref_logp)
            loss_per_token = loss_per_token + hp.kl_coef * kl
        else:
            kl = torch.zeros_like(logp)
        compute.acc.backward((loss_per_token * mask).sum() * scale)
        critic_terms = {}
        if run.critic is not None:
            critic_terms = self._critic_backward(indices, real, scale, ids, attention, mask, old, adv)
        if real:
            with torch.no_grad():
                totals.token_sums["tokens"] += mask.sum()
                per_token = {"policy_loss": pg, "entropy": entropy, "kl": kl, "clipped": clipped}
                per_token |= {"advantage": advantage, "ratio": ratio, "ppo_kl": old_logp - logp, **critic_terms}
                for name, value in per_token.items():
                    totals.add(name, value, mask)

    def _critic_backward(self, indices, real, scale, ids, attention, mask, old: OldOutputs, adv: Advantages) -> dict:
        """Gradients of the critic's clipped value loss; its per-token loss and clip flags, for the totals."""
        values = self._values(ids, attention)
        if real or indices[0] in old.values:
            old_values = _pad_like(mask, [old.values[i] for i in indices])
            returns = _pad_like(mask, [adv.returns[i] for i in indices])
        else:
            old_values, returns = values.detach(), values.detach()
        value_loss, value_clipped = losses.clipped_value_loss(values, old_values, returns, self.hp.value_clip)
        self.compute.acc.backward((value_loss * mask).sum() * scale)
        return {"value_loss": value_loss, "value_clipped": value_clipped}

    def _step_optimisers(self, totals: UpdateTotals) -> None:
        run, hp, compute = self.run, self.hp, self.compute
        # pass model.parameters() itself: accelerate then uses FSDP's own (global) clip
        totals.grad_norm += float(compute.acc.clip_grad_norm_(run.policy.parameters(), hp.max_grad_norm))
        run.policy_opt.step()
        run.policy_opt.zero_grad(set_to_none=True)
        if run.critic is not None:
            totals.value_grad_norm += float(compute.acc.clip_grad_norm_(run.critic.parameters(), hp.max_grad_norm))
            run.critic_opt.step()
            run.critic_opt.zero_grad(set_to_none=True)
        totals.updates += 1

    # ---------------------------------------------------------------- phase 4: metrics
    def metrics(self, totals: UpdateTotals, policy_lr: float, value_lr: float) -> dict:
        hp, n_samples = self.hp, len(self.samples)
        means = totals.token_means(self.compute.all_reduce)
        n_updates = max(totals.updates, 1)
        loss = (
            means["policy_loss"] - hp.entropy_coef * means["entropy"] + hp.kl_coef * means["kl"] + means["value_loss"]
        )
        return {
            "loss": loss,
            "policy_loss": means["policy_loss"],
            "value_loss": means["value_loss"],
            "kl": means["kl"],
            "entropy": means["entropy"],
            "clip_fraction": means["clipped"],
            "value_clip_fraction": means["value_clipped"],
            "grad_norm": totals.grad_norm / n_updates,
            "value_grad_norm": totals.value_grad_norm / n_updates,
            "reward_mean": float(self.rewards.mean()),
            "reward_std": float(self.rewards.std()) if n_samples > 1 else 0.0,
            "advantage_mean": means["advantage"],
            "ratio_mean": means["ratio"],
            "ppo_kl": means["ppo_kl"],
            "tokens": int(sum(e.n_completion for e in self.encoded)),
            "prompt_tokens": int(sum(e.n_prompt for e in self.encoded)),
            "samples": n_samples,
            "groups": len({s.group for s in self.samples}),
            "updates": totals.updates,
            "learning_rate": policy_lr,
            "value_learning_rate": value_lr if self.run.critic is not None else 0.0,
            "seconds": 0.0,
        }
