// Generated from trainer/settings.schema.json by npm run generate:settings: do not edit.
// The trainer's pydantic models (Hyperparameters, LoraSpec) are the source of these settings.
// No zod here: the workflow bundle imports this table (see liveSet.ts).

/** Hyperparameters an operator may change on a live run, with their bounds and what they need. */
export const LIVE_HYPERPARAMETER_RULES = {
  learning_rate: { max: 1, gt: 0 },
  clip_ratio: { gt: 0, lt: 1 },
  kl_coef: { min: 0 },
  entropy_coef: { min: 0 },
  value_learning_rate: { max: 1, gt: 0, needs: 'critic' },
  max_grad_norm: { gt: 0 },
} as const;
