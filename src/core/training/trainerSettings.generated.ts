// Generated from trainer/settings.schema.json by npm run generate:settings: do not edit.
// The trainer's pydantic models (Hyperparameters, LoraSpec) are the source of these settings.
import { z } from 'zod';

/** The trainer's algorithm names (RunCreate.algorithm). */
export const TRAINER_ALGORITHMS = ['grpo', 'ppo'] as const;

const HYPERPARAMETER_HELP = {
  learning_rate: "policy learning rate (paper: 1e-6); the trainer's default: 0.000001",
  warmup_steps: "linear LR warm-up over this many run steps; the trainer's default: 0",
  clip_ratio: "PPO/GRPO surrogate clip epsilon; the trainer's default: 0.2",
  kl_coef: "weight of the k3 KL to the frozen reference; the trainer's default: 0",
  entropy_coef: "entropy bonus weight; the trainer's default: 0",
  value_learning_rate: "critic learning rate (PPO); the trainer's default: 0.00001",
  value_clip: "clip range of the value loss (PPO); the trainer's default: 0.5",
  gamma: "the trainer's default: 1",
  lam: "the trainer's default: 1",
  max_grad_norm: "the trainer's default: 1",
  micro_batch_size: "samples per forward/backward (grad accumulation); the trainer's default: 4",
  mini_batch_size: "samples per optimizer update; null = the whole step (one update); the trainer's default: null",
  ppo_epochs: "passes over the step's samples; the trainer's default: 1",
  weight_decay: "the trainer's default: 0",
  adam_beta1: "the trainer's default: 0.9",
  adam_beta2: "the trainer's default: 0.999",
  adam_eps: "the trainer's default: 1e-8",
  advantage_eps: "eps in (r - mean) / (std + eps); the trainer's default: 0.000001",
  normalize_advantage_std: "GRPO: divide by the group std; the trainer's default: true",
  whiten_advantages: "PPO: whiten GAE advantages over the step; the trainer's default: true",
  temperature: "sampling temperature the logits are scaled by; the trainer's default: 1",
  max_length: "max prompt+completion tokens (prompt cut on the left); the trainer's default: 4096",
  append_eos: "append the end-of-turn token to each completion; the trainer's default: true",
  gradient_checkpointing: "the trainer's default: false",
  keep_checkpoints:
    "LoRA: keep the last N adapter checkpoints (0 = all); full weights keep their last 2 snapshots; the trainer's default: 0",
  snapshot_every:
    "snapshot weights and AdamW states every N steps; the steps between are durable by the step log and replayed after a crash (null = the mode's default: every step for LoRA, every 10 for full weights); the trainer's default: null",
  export_keep:
    "write each step's policy weights in the served dtype and keep the newest N (what a vLLM publish, a replica's download or sampling an older step within maxStaleness reads); 0 = only the snapshots and the live weights have them; the trainer's default: 0",
  is_truncation:
    "off-policy correction: each token's policy loss is weighted by min(exp(logp_before_update - logp_sampler), is_truncation); the trainer's default: 2",
} as const;

export const trainerHyperparametersSchema = z.strictObject({
  learning_rate: z.number().gt(0).max(1).describe(HYPERPARAMETER_HELP.learning_rate).optional(),
  warmup_steps: z.number().int().min(0).describe(HYPERPARAMETER_HELP.warmup_steps).optional(),
  clip_ratio: z.number().gt(0).lt(1).describe(HYPERPARAMETER_HELP.clip_ratio).optional(),
  kl_coef: z.number().min(0).describe(HYPERPARAMETER_HELP.kl_coef).optional(),
  entropy_coef: z.number().min(0).describe(HYPERPARAMETER_HELP.entropy_coef).optional(),
  value_learning_rate: z.number().gt(0).max(1).describe(HYPERPARAMETER_HELP.value_learning_rate).optional(),
  value_clip: z.number().gt(0).describe(HYPERPARAMETER_HELP.value_clip).optional(),
  gamma: z.number().min(0).max(1).describe(HYPERPARAMETER_HELP.gamma).optional(),
  lam: z.number().min(0).max(1).describe(HYPERPARAMETER_HELP.lam).optional(),
  max_grad_norm: z.number().gt(0).describe(HYPERPARAMETER_HELP.max_grad_norm).optional(),
  micro_batch_size: z.number().int().min(1).describe(HYPERPARAMETER_HELP.micro_batch_size).optional(),
  mini_batch_size: z.number().int().min(1).nullable().describe(HYPERPARAMETER_HELP.mini_batch_size).optional(),
  ppo_epochs: z.number().int().min(1).max(16).describe(HYPERPARAMETER_HELP.ppo_epochs).optional(),
  weight_decay: z.number().min(0).describe(HYPERPARAMETER_HELP.weight_decay).optional(),
  adam_beta1: z.number().min(0).lt(1).describe(HYPERPARAMETER_HELP.adam_beta1).optional(),
  adam_beta2: z.number().min(0).lt(1).describe(HYPERPARAMETER_HELP.adam_beta2).optional(),
  adam_eps: z.number().gt(0).describe(HYPERPARAMETER_HELP.adam_eps).optional(),
  advantage_eps: z.number().gt(0).describe(HYPERPARAMETER_HELP.advantage_eps).optional(),
  normalize_advantage_std: z.boolean().describe(HYPERPARAMETER_HELP.normalize_advantage_std).optional(),
  whiten_advantages: z.boolean().describe(HYPERPARAMETER_HELP.whiten_advantages).optional(),
  temperature: z.number().gt(0).describe(HYPERPARAMETER_HELP.temperature).optional(),
  max_length: z.number().int().min(8).describe(HYPERPARAMETER_HELP.max_length).optional(),
  append_eos: z.boolean().describe(HYPERPARAMETER_HELP.append_eos).optional(),
  gradient_checkpointing: z.boolean().describe(HYPERPARAMETER_HELP.gradient_checkpointing).optional(),
  keep_checkpoints: z.number().int().min(0).describe(HYPERPARAMETER_HELP.keep_checkpoints).optional(),
  snapshot_every: z.number().int().min(1).nullable().describe(HYPERPARAMETER_HELP.snapshot_every).optional(),
  export_keep: z.number().int().min(0).max(1000).describe(HYPERPARAMETER_HELP.export_keep).optional(),
  is_truncation: z.number().gt(0).describe(HYPERPARAMETER_HELP.is_truncation).optional(),
});

const LORA_HELP = {
  r: "LoRA rank (vLLM's default --max-lora-rank is 16)",
} as const;

export const trainerLoraSchema = z.strictObject({
  r: z.number().int().min(1).max(512).describe(LORA_HELP.r).default(16),
  alpha: z.number().gt(0).default(32),
  dropout: z.number().min(0).lt(1).default(0),
  target_modules: z.union([z.array(z.string()), z.literal('all-linear')]).optional(),
});
