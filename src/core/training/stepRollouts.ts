import type { RolloutSummary } from '../transcript.js';
import { keepGroups, type GroupDecision } from './groups.js';
import type { PlannedRollout } from './stepPlan.js';

/**
 * GRPO compares a dialogue with the others of its group, so a group needs two survivors; PPO and
 * GRPO with one sample per scenario train on every finished dialogue.
 */
export function minGroupSize(algorithm: 'grpo' | 'ppo', samplesPerScenario: number): number {
  return algorithm === 'grpo' && samplesPerScenario > 1 ? 2 : 1;
}

/** The dialogues that go to the optimizer, and how many were left out. */
export interface StepSurvivors {
  decision: GroupDecision;
  /** The kept dialogues' summaries, in the decision's order. */
  kept: RolloutSummary[];
  /** What the optimizer gets: each kept dialogue's transcript key and group. */
  optimizerRollouts: { artifact: string; group: string }[];
}

/**
 * The outcome of each planned dialogue of a step over its attempts: a retried dialogue's last
 * attempt counts. The first error is the earliest dialogue that failed and has not yet succeeded.
 */
export class StepRolloutOutcomes {
  private readonly results = new Map<string, RolloutSummary | null>();
  private readonly errors = new Map<string, string>();

  constructor(readonly planned: readonly PlannedRollout[]) {}

  succeeded(rolloutId: string, summary: RolloutSummary): void {
    this.results.set(rolloutId, summary);
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
