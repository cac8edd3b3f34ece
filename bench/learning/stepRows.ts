import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { CreditMode } from '../../src/core/training/credit.js';
import { median } from '../median.js';
import type { PolicyServer } from './vllmPolicy.js';

/** One step of one run in the results file's `rows`. */
export interface StepRow {
  run: string;
  step: number;
  staleness: number;
  credit: CreditMode;
  policy_server: PolicyServer;
  /** From the step before's metrics record (step 1: from the run's start) to this step's. */
  step_seconds: number;
  /** From the publish's start to vLLM's first token of the step's version (null: the trainer serves it). */
  publish_latency_ms: number | null;
  reward_mean: number;
  turn_reward_mean: number | null;
  policy_version: string;
}

/** A run's rows from its step metrics; `startedMs` is when the run was started. */
export function stepRows(
  run: { name: string; staleness: number; credit: CreditMode; policyServer: PolicyServer },
  metrics: readonly StepMetricsRecord[],
  startedMs: number,
): StepRow[] {
  return metrics.map((m, i) => ({
    run: run.name,
    step: m.step,
    staleness: run.staleness,
    credit: run.credit,
    policy_server: run.policyServer,
    step_seconds: (Date.parse(m.time) - (i === 0 ? startedMs : Date.parse(metrics[i - 1]!.time))) / 1000,
    publish_latency_ms: m.publishLatencyMs ?? null,
    reward_mean: m.reward.mean,
    turn_reward_mean: m.turnReward?.mean ?? null,
    policy_version: m.policyVersion,
  }));
}

/** The median step time after the first step, whose time includes the trainer's and the rig's start. */
export function medianStepSeconds(rows: readonly StepRow[]): number {
  return median(rows.slice(rows.length > 1 ? 1 : 0).map((r) => r.step_seconds));
}
