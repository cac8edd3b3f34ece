import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { CreditMode } from '../../src/core/training/credit.js';
import { median } from '../median.js';
import type { PolicyServer } from './vllmPolicy.js';
import type { StepDialogues } from '../../src/core/training/dialogueStreamState.js';

/** One step of one run in the results file's `rows`. */
export interface StepRow {
  run: string;
  step: number;
  staleness: number;
  credit: CreditMode;
  policy_server: PolicyServer;
  /** training.stepDialogues of the run. */
  step_dialogues: StepDialogues;
  /** From the step before's metrics record (step 1: from the run's start) to this step's. */
  step_seconds: number;
  /** From the publish's start to vLLM's first token of the step's version (null: the trainer serves it). */
  publish_latency_ms: number | null;
  reward_mean: number;
  turn_reward_mean: number | null;
  /** The step's oldest version with first-finished steps (their dialogues sample several). */
  policy_version: string;
  /** First-finished steps: the dialogues the step took, how many an earlier step had started, and those dropped as stale since the step before (null: planned). */
  dialogues_taken: number | null;
  carried_over: number | null;
  dropped_stale: number | null;
}

/** A run's rows from its step metrics; `startedMs` is when the run was started. */
export function stepRows(
  run: {
    name: string;
    staleness: number;
    credit: CreditMode;
    policyServer: PolicyServer;
    stepDialogues: StepDialogues;
  },
  metrics: readonly StepMetricsRecord[],
  startedMs: number,
): StepRow[] {
  return metrics.map((m, i) => ({
    run: run.name,
    step: m.step,
    staleness: run.staleness,
    credit: run.credit,
    policy_server: run.policyServer,
    step_dialogues: run.stepDialogues,
    step_seconds: (Date.parse(m.time) - (i === 0 ? startedMs : Date.parse(metrics[i - 1]!.time))) / 1000,
    publish_latency_ms: m.publishLatencyMs ?? null,
    reward_mean: m.reward.mean,
    turn_reward_mean: m.turnReward?.mean ?? null,
    policy_version: m.policyVersion,
    dialogues_taken: m.dialogues ? m.dialogues.taken.length : null,
    carried_over: m.dialogues?.carriedOver ?? null,
    dropped_stale: m.dialogues ? m.dialogues.droppedStale.length : null,
  }));
}

/** The median step time after the first step, whose time includes the trainer's and the rig's start. */
export function medianStepSeconds(rows: readonly StepRow[]): number {
  return median(rows.slice(rows.length > 1 ? 1 : 0).map((r) => r.step_seconds));
}
