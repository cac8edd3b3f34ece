/** The trainer's per-step metrics (POST /v1/runs/{run}/steps response). */
export interface TrainerStepMetrics {
  loss: number;
  policy_loss: number;
  value_loss: number;
  kl: number;
  entropy: number;
  clip_fraction: number;
  grad_norm: number;
  reward_mean: number;
  advantage_mean: number;
  tokens: number;
  seconds: number;
}

/** One line of `runs/<run>/metrics.jsonl` in the artifact store, appended after each step. */
export interface StepMetricsRecord {
  kind: 'attune.step';
  run: string;
  step: number;
  algorithm: 'grpo' | 'ppo';
  time: string;
  /** The policy version the step's rollouts sampled from (e.g. run@step-1). */
  policyVersion: string;
  rollouts: { ok: number; failed: number; dropped: number };
  reward: { mean: number; std: number; min: number; max: number };
  successRate: number;
  failureRate: number;
  malformedRate: number;
  meanTurns: number;
  trainer: TrainerStepMetrics;
  /** Present on steps that ran an evaluation. */
  eval?: { evalId: string; score: number; success: number; failure: number; count: number };
}
