// Generated from trainer/settings.schema.json by npm run generate:settings: do not edit.
// The trainer's pydantic models (Hyperparameters, LoraSpec) are the source of these settings.
import { z } from 'zod';

/** The trainer's algorithm names (RunCreate.algorithm). */
export const TRAINER_ALGORITHMS = ['grpo', 'ppo'] as const;

export const trainerHyperparametersSchema = z.strictObject({
  /** policy learning rate (paper: 1e-6) */
  learning_rate: z.number().gt(0).max(1).optional(),
  /** linear LR warm-up over this many run steps */
  warmup_steps: z.number().int().min(0).optional(),
  /** PPO/GRPO surrogate clip epsilon */
  clip_ratio: z.number().gt(0).lt(1).optional(),
  /** weight of the k3 KL to the frozen reference */
  kl_coef: z.number().min(0).optional(),
  /** entropy bonus weight */
  entropy_coef: z.number().min(0).optional(),
  /** critic learning rate (PPO) */
  value_learning_rate: z.number().gt(0).max(1).optional(),
  /** clip range of the value loss (PPO) */
  value_clip: z.number().gt(0).optional(),
  gamma: z.number().min(0).max(1).optional(),
  lam: z.number().min(0).max(1).optional(),
  max_grad_norm: z.number().gt(0).optional(),
  /** samples per forward/backward (grad accumulation) */
  micro_batch_size: z.number().int().min(1).optional(),
  /** samples per optimizer update; null = the whole step (one update) */
  mini_batch_size: z.number().int().min(1).nullable().optional(),
  /** passes over the step's samples */
  ppo_epochs: z.number().int().min(1).max(16).optional(),
  weight_decay: z.number().min(0).optional(),
  adam_beta1: z.number().min(0).lt(1).optional(),
  adam_beta2: z.number().min(0).lt(1).optional(),
  adam_eps: z.number().gt(0).optional(),
  /** eps in (r - mean) / (std + eps) */
  advantage_eps: z.number().gt(0).optional(),
  /** GRPO: divide by the group std */
  normalize_advantage_std: z.boolean().optional(),
  /** PPO: whiten GAE advantages over the step */
  whiten_advantages: z.boolean().optional(),
  /** sampling temperature the logits are scaled by */
  temperature: z.number().gt(0).optional(),
  /** max prompt+completion tokens (prompt cut on the left) */
  max_length: z.number().int().min(8).optional(),
  /** append the end-of-turn token to each completion */
  append_eos: z.boolean().optional(),
  gradient_checkpointing: z.boolean().optional(),
  /** keep only the last N weight checkpoints (0 = all) */
  keep_checkpoints: z.number().int().min(0).optional(),
  /** off-policy correction: each token's policy loss is weighted by min(exp(logp_before_update - logp_sampler), is_truncation) */
  is_truncation: z.number().gt(0).optional(),
});

export const trainerLoraSchema = z.strictObject({
  /** LoRA rank (vLLM's default --max-lora-rank is 16) */
  r: z.number().int().min(1).max(512).default(16),
  alpha: z.number().gt(0).default(32),
  dropout: z.number().min(0).lt(1).default(0),
  target_modules: z.union([z.array(z.string()), z.literal('all-linear')]).optional(),
});
