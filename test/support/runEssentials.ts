import type { StepMetricsRecord } from '../../src/core/runMetrics.js';

/**
 * What a step applied twice, or a dialogue lost or counted twice, would change in a run's metrics:
 * two runs of the same seed must agree on these exactly.
 */
export function essentials(metrics: StepMetricsRecord[]) {
  return metrics.map((m) => ({
    step: m.step,
    rollouts: m.rollouts,
    reward: m.reward.mean.toFixed(6),
    loss: m.trainer.loss.toFixed(6),
    kl: m.trainer.kl.toFixed(6),
    gradNorm: m.trainer.grad_norm.toFixed(5),
    tokens: m.trainer.tokens,
  }));
}
