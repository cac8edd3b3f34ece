import type { CapabilitySummary } from './capabilityReport.js';
import type { CapabilitySuite } from './capabilitySuites.js';

/**
 * Capability retention during a training run (`training.evalSuites`): each periodic evaluation also
 * scores the capability suites, read against the base policy's scores on the same suites. Pure: the
 * records and the guardrail (`capabilityDrop`) share it.
 */

/** A suite's headline: share solved, its 95 % Wilson interval, and the problems that ran. */
export interface SuiteScore {
  score: number | null;
  ci: { low: number; high: number } | null;
  count: number;
}

/** The base policy's (step 0) score on a suite, kept by the run and named in each step's record. */
export interface CapabilityBase extends SuiteScore {
  suite: CapabilitySuite;
  evalId: string;
}

/** A suite's score as a step records it, beside the Sentient score. */
export interface CapabilityStepScore extends SuiteScore {
  suite: CapabilitySuite;
  evalId: string;
  solved: number;
  failed: number;
  /** The base's score on the same suite; absent while the run has none (its evaluation failed). */
  base?: Omit<CapabilityBase, 'suite'>;
}

/** A suite whose score fell below the base's by more than the intervals explain. */
export interface CapabilityDrop {
  suite: CapabilitySuite;
  current: SuiteScore;
  base: SuiteScore;
  /** Percentage points between the base's lower bound and the current upper bound. */
  drop: number;
}

/**
 * The stated rule: a suite dropped by more than `points` percentage points only when the base's
 * lower 95 % bound lies more than `points` above the current upper bound, so two noisy scores of
 * a small suite never trip it by chance. Null when either side has no interval (nothing ran).
 */
export function capabilityDropPoints(base: SuiteScore, current: SuiteScore): number | null {
  if (!base.ci || !current.ci) return null;
  return (base.ci.low - current.ci.high) * 100;
}

/** The suites of a step that dropped past `points`, the largest drop first. */
export function droppedSuites(scores: readonly CapabilityStepScore[], points: number): CapabilityDrop[] {
  return scores
    .flatMap((s): CapabilityDrop[] => {
      if (!s.base) return [];
      const drop = capabilityDropPoints(s.base, s);
      return drop !== null && drop > points ? [{ suite: s.suite, current: s, base: s.base, drop }] : [];
    })
    .sort((a, b) => b.drop - a.drop);
}

const pct = (x: number | null) => (x === null ? '–' : (x * 100).toFixed(1));

/** "math 12.0 % [5.6, 23.8] of 50": a score, its interval and its problem count, as a pause names them. */
export function describeSuiteScore(suite: string, s: SuiteScore): string {
  const interval = s.ci ? ` [${pct(s.ci.low)}, ${pct(s.ci.high)}]` : '';
  return `${suite} ${pct(s.score)} %${interval} of ${s.count}`;
}

/** The base's score as the run keeps it, from the suite run's headline. */
export function capabilityBaseOf(summary: CapabilitySummary): CapabilityBase {
  const { suite, evalId, score, ci, count } = summary;
  return { suite, evalId, score, ci, count };
}

/** A suite run's headline as the step records it, with the base's score on the same suite if the run has one. */
export function capabilityStepScore(
  summary: CapabilitySummary,
  bases: readonly CapabilityBase[] = [],
): CapabilityStepScore {
  const { suite, evalId, score, ci, solved, count, failed } = summary;
  const base = bases.find((b) => b.suite === suite);
  return {
    suite,
    evalId,
    score,
    ci,
    solved,
    count,
    failed,
    ...(base ? { base: { evalId: base.evalId, score: base.score, ci: base.ci, count: base.count } } : {}),
  };
}
