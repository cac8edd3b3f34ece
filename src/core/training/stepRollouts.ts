import { ApplicationFailure } from '@temporalio/common';
import { ALGORITHM_TRAITS, type Algorithm } from './algorithms.js';
import type { Outcome } from '../termination.js';
import type { EndpointWaits, RolloutSummary } from '../transcript.js';
import { changesFromEmotions } from './credit.js';
import { keepGroups, type GroupDecision } from './groups.js';
import type { PlannedRollout } from './stepPlan.js';

/** Survivors a scenario's group needs to be trained on (see ALGORITHM_TRAITS). */
export function minGroupSize(algorithm: Algorithm, samplesPerScenario: number): number {
  return ALGORITHM_TRAITS[algorithm].minGroupSize(samplesPerScenario);
}

/** What a step keeps of a finished dialogue: what its metrics and the optimizer need, no more. */
export interface StepRolloutResult {
  reward: number;
  outcome: Outcome;
  turns: number;
  /** The transcript's key in the artifact store. */
  artifact: string;
  /** The emotion change each assistant turn caused, and the final emotion: the per-turn credit's inputs (absent in older states). */
  changes?: number[];
  finalEmotion?: number;
  /** Present when the dialogue's calls waited for a tokens-per-minute budget. */
  rateLimitWaits?: EndpointWaits;
}

/** What a step keeps of a dialogue's summary. */
export function stepRolloutResultOf(summary: RolloutSummary): StepRolloutResult {
  const { reward, outcome, turns, artifact } = summary;
  // Summaries made by hand (tests, older callers) may lack tokens and emotions.
  const waits = (summary.tokens as RolloutSummary['tokens'] | undefined)?.rateLimitWaits;
  const emotions = summary.emotions as number[] | undefined;
  return {
    reward,
    outcome,
    turns,
    artifact,
    ...(emotions ? { changes: changesFromEmotions(emotions, turns), finalEmotion: summary.finalEmotion } : {}),
    ...(waits ? { rateLimitWaits: waits } : {}),
  };
}

/**
 * A step's outcomes so far, small enough to carry across continue-as-new: per planned dialogue
 * (by its index in the plan) its result or its error, in the order they were first recorded.
 */
export interface StepOutcomesSnapshot {
  results: Array<[number, StepRolloutResult | null]>;
  errors: Array<[number, string]>;
}

/** Errors after the first are cut to this length in a snapshot: the first is what status shows. */
const CARRIED_ERROR_CHARS = 300;

/** The dialogues that go to the optimizer, and how many were left out. */
export interface StepSurvivors {
  decision: GroupDecision;
  /** The kept dialogues' results, in the decision's order. */
  kept: StepRolloutResult[];
  /** What the optimizer gets: each kept dialogue's transcript key and group. */
  optimizerRollouts: { artifact: string; group: string; policyVersion?: number }[];
}

/**
 * The outcome of each planned dialogue of a step over its attempts: a retried dialogue's last
 * attempt counts. The first error is the earliest dialogue that failed and has not yet succeeded.
 */
export class StepRolloutOutcomes {
  private readonly results = new Map<string, StepRolloutResult | null>();
  private readonly errors = new Map<string, string>();

  constructor(readonly planned: readonly PlannedRollout[]) {}

  /** The outcomes a snapshot of the same plan recorded. */
  static restored(planned: readonly PlannedRollout[], snapshot: StepOutcomesSnapshot): StepRolloutOutcomes {
    const outcomes = new StepRolloutOutcomes(planned);
    const idAt = (index: number): string => {
      const p = planned[index];
      if (!p)
        throw ApplicationFailure.nonRetryable(
          `the carried step names dialogue ${index} of a plan of ${planned.length}`,
          'BadTrainingState',
        );
      return p.rolloutId;
    };
    for (const [index, result] of snapshot.results) outcomes.results.set(idAt(index), result);
    for (const [index, message] of snapshot.errors) outcomes.errors.set(idAt(index), message);
    return outcomes;
  }

  succeeded(rolloutId: string, summary: RolloutSummary): void {
    this.results.set(rolloutId, stepRolloutResultOf(summary));
    this.errors.delete(rolloutId);
  }

  failed(rolloutId: string, message: string): void {
    this.results.set(rolloutId, null);
    this.errors.set(rolloutId, message);
  }

  get doneCount(): number {
    return [...this.results.values()].filter((r) => r !== null).length;
  }

  get failedCount(): number {
    return this.errors.size;
  }

  /** The error of the earliest dialogue that failed and has not yet succeeded. */
  get firstError(): string | undefined {
    return [...this.errors.values()][0];
  }

  /** Whether a dialogue has an outcome yet (in any attempt). */
  has(rolloutId: string): boolean {
    return this.results.has(rolloutId);
  }

  /** The outcomes so far, to carry across continue-as-new (see `restored`). */
  snapshot(): StepOutcomesSnapshot {
    const indexOf = new Map(this.planned.map((p, i) => [p.rolloutId, i]));
    const at = (rolloutId: string): number => indexOf.get(rolloutId)!;
    return {
      results: [...this.results].map(([id, result]) => [at(id), result]),
      errors: [...this.errors].map(([id, message], i) => [
        at(id),
        i === 0 ? message : message.slice(0, CARRIED_ERROR_CHARS),
      ]),
    };
  }

  /** The dialogues to run again when the operator resumes. */
  failedRollouts(): PlannedRollout[] {
    return this.planned.filter((p) => this.errors.has(p.rolloutId));
  }

  /** More than `maxFailedShare` of the step failed: the run waits for an operator. */
  tooManyFailed(maxFailedShare: number): boolean {
    return this.errors.size / this.planned.length > maxFailedShare;
  }

  /** Why the run waits for an operator, for `attune status`. */
  blockedReason(maxFailedShare: number): string {
    return `${this.errors.size} of ${this.planned.length} rollouts failed (limit ${Math.round(maxFailedShare * 100)}%); first error: ${this.firstError ?? ''}`;
  }

  /** The dialogues the optimizer trains on: whole groups with at least `minimum` survivors. */
  survivors(minimum: number): StepSurvivors {
    const decision = keepGroups(
      this.planned.map((p) => ({
        rolloutId: p.rolloutId,
        scenarioId: p.scenarioId,
        group: p.group,
        ok: this.results.get(p.rolloutId) != null,
      })),
      minimum,
    );
    return {
      decision,
      kept: decision.kept.map((r) => this.results.get(r.rolloutId)!),
      optimizerRollouts: decision.kept.map((r) => ({
        artifact: this.results.get(r.rolloutId)!.artifact,
        group: r.group,
      })),
    };
  }
}
