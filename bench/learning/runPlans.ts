import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { CreditMode } from '../../src/core/training/credit.js';
import { STEP_DIALOGUES, type StepDialogues } from '../../src/core/training/dialogueStreamState.js';
import type { PolicyServer } from './vllmPolicy.js';
import { stepDialoguesOverrides as pipelineStepDialoguesOverrides } from '../pipeline/pipelineRun.js';

/** One of the benchmark's runs before the options multiply it. */
export interface RunPlan {
  name: string;
  algorithm: 'grpo' | 'ppo';
  model: string;
  simulator: 'rule-based user' | 'local SmolLM2';
}

export interface StaleRunPlan extends RunPlan {
  /** training.maxStaleness of the run. */
  staleness: number;
  /** training.credit.mode of the run. */
  credit: CreditMode;
  policyServer: PolicyServer;
  /** training.stepDialogues of the run. */
  stepDialogues: StepDialogues;
}

/** The learnable task's dialogues a step (learningSet: GRPO 2 scenarios x 4 samples, PPO 8 x 1). */
const DIALOGUES_PER_STEP = 8;

/**
 * A first-finished run keeps twice a step's dialogues in flight, as bench:pipeline's --in-flight
 * default, rather than training.maxInFlight's default of 64, eight steps' worth of this task's.
 */
export const FIRST_FINISHED_IN_FLIGHT = 2 * DIALOGUES_PER_STEP;

/** --step-dialogues' comma-separated values; null unless each is a training.stepDialogues value, none twice. */
export function stepDialoguesList(text: string): StepDialogues[] | null {
  const modes = text.split(',').map((s) => s.trim());
  const valid =
    modes.every((m) => (STEP_DIALOGUES as readonly string[]).includes(m)) && new Set(modes).size === modes.length;
  return valid ? (modes as StepDialogues[]) : null;
}

/** The run's training.stepDialogues overrides (bench:pipeline's, with this task's in-flight count). */
export function stepDialoguesOverrides(stepDialogues: StepDialogues): string[] {
  return pipelineStepDialoguesOverrides(stepDialogues, FIRST_FINISHED_IN_FLIGHT);
}

/**
 * Every plan once per policy server, staleness, step-dialogue mode and credit mode; the defaults
 * (trainer, 0, planned, final) add nothing to the name, the others `-<server>`, `-stale<S>`, `-ff`,
 * `-<credit>`. First-finished steps need staleness 1 or more (a config check): those combinations
 * are left out and listed in `skipped`.
 */
export function multiplyPlans(
  base: readonly RunPlan[],
  options: {
    policyServers: readonly PolicyServer[];
    stalenesses: readonly number[];
    stepDialogues: readonly StepDialogues[];
    credits: readonly CreditMode[];
  },
): { plans: StaleRunPlan[]; skipped: string[] } {
  const plans: StaleRunPlan[] = [];
  const skipped: string[] = [];
  for (const p of base)
    for (const policyServer of options.policyServers)
      for (const staleness of options.stalenesses)
        for (const stepDialogues of options.stepDialogues)
          for (const credit of options.credits) {
            const name = `${p.name}${policyServer === 'trainer' ? '' : `-${policyServer}`}${staleness === 0 ? '' : `-stale${staleness}`}${stepDialogues === 'firstFinished' ? '-ff' : ''}${credit === 'final' ? '' : `-${credit}`}`;
            if (stepDialogues === 'firstFinished' && staleness === 0) skipped.push(name);
            else plans.push({ ...p, name, staleness, credit, policyServer, stepDialogues });
          }
  return { plans, skipped };
}

/**
 * The version each step sampled proves the run trained at the staleness asked for: with S > 0, a
 * planned step n samples the weights of step n-1-S (the base model before there are any). A
 * first-finished step takes dialogues of several versions and records the oldest, v: it must lie
 * within the bound (n-1-v <= S) and be no newer than the weights step n could have sampled (v <= n-1).
 */
export function checkStaleness(plan: StaleRunPlan, metrics: readonly StepMetricsRecord[]): void {
  for (const m of metrics) {
    if (plan.stepDialogues === 'firstFinished') {
      const version = Number(/@(\d+)$/.exec(m.policyVersion)?.[1] ?? NaN);
      if (!(version <= m.step - 1 && m.step - 1 - version <= plan.staleness))
        throw new Error(
          `${plan.name}: step ${m.step} took a dialogue of ${m.policyVersion}, outside training.maxStaleness=${plan.staleness}`,
        );
      continue;
    }
    const expected = `${plan.name}@${Math.max(0, m.step - 1 - plan.staleness)}`;
    if (m.policyVersion !== expected)
      throw new Error(
        `${plan.name}: step ${m.step} sampled ${m.policyVersion}, not ${expected}: training.maxStaleness=${plan.staleness} was not in force`,
      );
  }
}
