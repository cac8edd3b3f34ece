import type { TrainerStepMetrics } from '../runMetrics.js';
import type { StepTake } from './dialogueStreamState.js';
import type { ReplySignals } from './replySignals.js';
import type { StepSurvivors } from './stepRollouts.js';

/** A step whose dialogues are done, ready for the optimizer. */
export interface StepToApply {
  step: number;
  /** Epoch ms the step's duration is counted from. */
  startedAt: number;
  /** The version name the rollouts sampled. */
  policyVersion: string;
  /** The step whose weights the rollouts sampled (0: the base model). */
  sampledFrom: number;
  survivors: StepSurvivors;
  /** Steps that take the first finished dialogues: which ones this step took, and what was dropped since the last. */
  take?: StepTake;
}

/** The trainer's answer to a step: the new version, its metrics and where its weights were exported. */
export interface OptimizerStepResult {
  step: number;
  version: string;
  metrics: TrainerStepMetrics;
  exportPath: string | null;
  replayed: boolean;
  samples: number;
  /**
   * Milliseconds from the trainer's commit of the step to its answer, on the trainer's clock; null
   * for a step applied earlier (its stored result) or a trainer that does not report it.
   */
  commitToAnswerMs?: number | null;
  /** What the step's replies look like, for the guardrails (absent in results recorded before them). */
  signals?: ReplySignals;
}

/**
 * A step the optimizer applied whose weights are not published yet: with first-finished steps the
 * next run of the workflow publishes and records it while the optimizer trains the step after it.
 */
export interface OptimizedStep extends StepToApply {
  applied: OptimizerStepResult;
}
