import { describeSuiteScore, droppedSuites, type CapabilityStepScore } from '../capability/retention.js';
import type { StepMetricsRecord } from '../runMetrics.js';
import type { Guardrail, GuardSignal } from './guardrailSchema.js';

/**
 * Guardrails (`training.guardrails`): rules over per-step signals, checked by the training workflow
 * after each recorded step. Everything here is a pure function of the step records, so a replay
 * or a continued run decides the same. The rules' schema: guardrailSchema.ts.
 */

/** A step as the guardrails see it. */
export interface GuardPoint {
  step: number;
  signals: Partial<Record<GuardSignal, number>>;
  /** On a step that evaluated with held-out simulators: each one's score, the training simulator's first. */
  simulators?: { name: string; score: number }[];
  /** On a step that scored capability suites against the base's scores (`training.evalSuites`). */
  capability?: CapabilityStepScore[];
}

/** A rule that tripped: its name, action and the figures that tripped it. */
export interface GuardTrip {
  rule: string;
  action: 'warn' | 'pause';
  step: number;
  figures: Record<string, number>;
  message: string;
}

/** What the run carries: recent points, rules resumed past (they pause again once clear), recent warnings. */
export interface GuardState {
  points: GuardPoint[];
  acknowledged: string[];
  warnings: GuardTrip[];
  /** The trip the run waits on, while it waits. */
  pausedBy: GuardTrip | null;
  /** The last evaluation's score, for the next one's change. */
  lastEvalScore?: number;
  /**
   * The points of the last evaluations, kept apart from `points`: with evaluations further apart than
   * `points` reaches, the rules over several evaluations would never see enough of them. Absent in
   * states from before it was kept: taken from `points` then.
   */
  evaluations?: GuardPoint[];
}

const KEPT_POINTS = 64;
const KEPT_EVALUATIONS = 16;
const KEPT_WARNINGS = 10;

/** Whether a point carries an evaluation the evaluation rules read. */
function isEvaluation(point: GuardPoint): boolean {
  return point.simulators !== undefined || point.signals.evalChange !== undefined;
}

export function emptyGuardState(): GuardState {
  return { points: [], acknowledged: [], warnings: [], pausedBy: null };
}

/** The signals of a recorded step (absent ones, from older records, trip nothing). */
export function guardPointOf(record: StepMetricsRecord): GuardPoint {
  const s = record.signals;
  return {
    step: record.step,
    signals: {
      reward: record.reward.mean,
      malformedShare: record.malformedRate,
      ...(s
        ? {
            replyLengthMean: s.replyLengthMean,
            replyLengthStd: s.replyLengthStd,
            emptyShare: s.emptyShare,
            repetition: s.repetition,
            distinctBigrams: s.distinctBigrams,
          }
        : {}),
      ...(s?.evalChange !== undefined ? { evalChange: s.evalChange } : {}),
    },
    ...(record.eval?.simulators && record.eval.simulators.length > 1
      ? { simulators: record.eval.simulators.map(({ name, score }) => ({ name, score })) }
      : {}),
    ...(record.capability?.some((c) => c.base) ? { capability: record.capability } : {}),
  };
}

/** A step's evaluation score less the previous evaluation's (undefined unless both exist). */
export function evalChange(previousScore: number | undefined, score: number | undefined): number | undefined {
  return previousScore === undefined || score === undefined ? undefined : score - previousScore;
}

const fmt = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(3));

function trip(rule: Guardrail, step: number, figures: Record<string, number>, what: string): GuardTrip {
  return {
    rule: rule.name,
    action: rule.action,
    step,
    figures,
    message: `guardrail ${rule.name} at step ${step}: ${what}`,
  };
}

/**
 * The training simulator's score rose by at least `rise` over the last `evaluations` evaluations
 * with held-out simulators while a held-out simulator's fell by at least `fall`; checked on the
 * step of the newest such evaluation only, so it trips once per evaluation.
 */
function checkHeldOutGap(
  rule: Extract<Guardrail, { kind: 'heldOutGapWidens' }>,
  now: GuardPoint,
  evaluations: readonly GuardPoint[],
): GuardTrip | null {
  if (!now.simulators) return null;
  const evals = evaluations.flatMap((p) => (p.simulators ? [p.simulators] : [])).slice(-rule.evaluations);
  const [first, last] = [evals[0], evals[evals.length - 1]];
  if (evals.length < rule.evaluations || !first || !last || !first[0] || !last[0]) return null;
  if (first[0].name !== last[0].name) return null;
  const trainingRise = last[0].score - first[0].score;
  if (trainingRise < rule.rise) return null;
  const falls = last.slice(1).flatMap((sim) => {
    const before = first.find((b) => b.name === sim.name);
    return before ? [{ name: sim.name, fall: before.score - sim.score }] : [];
  });
  const worst = falls.sort((a, b) => b.fall - a.fall)[0];
  if (!worst || worst.fall < rule.fall) return null;
  return trip(
    rule,
    now.step,
    { trainingRise, rise: rule.rise, heldOutFall: worst.fall, fall: rule.fall, evaluations: evals.length },
    `over the last ${evals.length} evaluations the training simulator (${last[0].name}) rose ${fmt(trainingRise)} (limit ${fmt(rule.rise)}) while held-out ${worst.name} fell ${fmt(worst.fall)} (limit ${fmt(rule.fall)})`,
  );
}

/** A suite of this step fell below the base's past the rule's points (the rule: retention.ts); names the largest drop. */
function checkCapabilityDrop(rule: Extract<Guardrail, { kind: 'capabilityDrop' }>, now: GuardPoint): GuardTrip | null {
  const [worst, ...others] = droppedSuites(now.capability ?? [], rule.points);
  if (!worst) return null;
  const { current, base } = worst;
  const pctOf = (x: number | null | undefined) => (x === null || x === undefined ? -1 : x * 100);
  const also = others.length > 0 ? `; also ${others.map((d) => `${d.suite} (${fmt(d.drop)})`).join(', ')}` : '';
  return trip(
    rule,
    now.step,
    {
      score: pctOf(current.score),
      low: pctOf(current.ci?.low),
      high: pctOf(current.ci?.high),
      count: current.count,
      baseScore: pctOf(base.score),
      baseLow: pctOf(base.ci?.low),
      baseHigh: pctOf(base.ci?.high),
      baseCount: base.count,
      drop: worst.drop,
      points: rule.points,
    },
    `${describeSuiteScore(worst.suite, current)} fell below the base's ${describeSuiteScore(worst.suite, base)}: the base's lower bound is ${fmt(worst.drop)} points above the current upper bound (limit ${fmt(rule.points)})${also}`,
  );
}

/**
 * Whether `rule` trips on the newest of `points` (oldest first); `evaluations`: the points that carry
 * evaluations, the newest included when it does (by default, those among `points`).
 */
export function checkRule(
  rule: Guardrail,
  points: readonly GuardPoint[],
  evaluations: readonly GuardPoint[] = points.filter(isEvaluation),
): GuardTrip | null {
  const now = points[points.length - 1];
  if (!now) return null;
  if (rule.kind === 'above' || rule.kind === 'below') {
    const v = now.signals[rule.signal];
    if (v === undefined) return null;
    const hit = rule.kind === 'above' ? v > rule.value : v < rule.value;
    return hit
      ? trip(
          rule,
          now.step,
          { [rule.signal]: v, limit: rule.value },
          `${rule.signal} ${fmt(v)} ${rule.kind} ${fmt(rule.value)}`,
        )
      : null;
  }
  if (rule.kind === 'heldOutGapWidens') return checkHeldOutGap(rule, now, evaluations);
  if (rule.kind === 'capabilityDrop') return checkCapabilityDrop(rule, now);
  if (rule.kind === 'growth') {
    const then = points[points.length - 1 - rule.steps]?.signals[rule.signal];
    const v = now.signals[rule.signal];
    if (then === undefined || v === undefined || then <= 0 || v / then < rule.factor) return null;
    return trip(
      rule,
      now.step,
      { before: then, now: v, ratio: v / then, factor: rule.factor },
      `${rule.signal} ${fmt(then)} -> ${fmt(v)} over ${rule.steps} steps (x${fmt(v / then)}, limit x${fmt(rule.factor)})`,
    );
  }
  const before = points[points.length - 1 - rule.steps]?.signals.reward;
  const reward = now.signals.reward;
  const changes = evaluations.flatMap((p) => (p.signals.evalChange === undefined ? [] : [p.signals.evalChange]));
  const [last2, last1] = changes.slice(-2);
  if (before === undefined || reward === undefined || last1 === undefined || last2 === undefined) return null;
  if (!(reward - before > rule.rise && last1 < 0 && last2 < 0)) return null;
  return trip(
    rule,
    now.step,
    { rewardRise: reward - before, rise: rule.rise, evalChange: last1, previousEvalChange: last2 },
    `reward up ${fmt(reward - before)} over ${rule.steps} steps (limit ${fmt(rule.rise)}) while the last two evaluations fell (${fmt(last2)}, ${fmt(last1)})`,
  );
}

/**
 * Adds a recorded step and checks the rules: the first pausing trip of a rule not resumed past
 * (null: the run goes on), the other pausing trips of rules not resumed past (they pause the run
 * again on a later step if they still trip), and the warnings. A rule the operator resumed past
 * warns instead until a step where it is clear.
 */
export function guardStep(
  state: GuardState,
  rules: readonly Guardrail[],
  point: GuardPoint,
  options: { evaluationsApart: boolean } = { evaluationsApart: true },
): { state: GuardState; pause: GuardTrip | null; alsoPausing: GuardTrip[]; warnings: GuardTrip[] } {
  const points = [...state.points, point].slice(-KEPT_POINTS);
  const earlier = state.evaluations ?? state.points.filter(isEvaluation);
  const evaluations = isEvaluation(point) ? [...earlier, point].slice(-KEPT_EVALUATIONS) : earlier;
  // Runs recorded before evaluations were kept apart read them from `points`, as they did then.
  const seen = options.evaluationsApart ? evaluations : points.filter(isEvaluation);
  const trips = rules.flatMap((r) => checkRule(r, points, seen) ?? []);
  const tripped = new Set(trips.map((t) => t.rule));
  const acknowledged = state.acknowledged.filter((r) => tripped.has(r));
  const pausing = trips.filter((t) => t.action === 'pause' && !acknowledged.includes(t.rule));
  const warnings = trips
    .filter((t) => !pausing.includes(t))
    .map((t): GuardTrip =>
      t.action === 'pause' ? { ...t, action: 'warn', message: `${t.message} (resumed past)` } : t,
    );
  return {
    state: {
      ...state,
      points,
      ...(options.evaluationsApart ? { evaluations } : {}),
      acknowledged,
      warnings: [...state.warnings, ...warnings].slice(-KEPT_WARNINGS),
    },
    pause: pausing[0] ?? null,
    alsoPausing: pausing.slice(1),
    warnings,
  };
}

/** The operator resumed past `trip`: its rule warns until it is clear. */
export function acknowledged(state: GuardState, trip: GuardTrip): GuardState {
  return { ...state, acknowledged: [...state.acknowledged, trip.rule], pausedBy: null };
}

/** The defaults: a policy that found a hack (empty replies, falling evaluations) waits for a person. */
export const DEFAULT_GUARDRAILS: Guardrail[] = [
  { kind: 'above', name: 'empty-replies', action: 'pause', signal: 'emptyShare', value: 0.2 },
  { kind: 'growth', name: 'reply-length-doubled', action: 'warn', signal: 'replyLengthMean', steps: 5, factor: 2 },
  { kind: 'rewardUpEvalDown', name: 'reward-up-eval-down', action: 'pause', steps: 5, rise: 0.1 },
  // Sentient scores are 0-100 means over the evaluation's dialogues; with tens of dialogues one
  // score's noise is a few points, so a 5-point rise on the training simulator together with a
  // 5-point fall on a held-out one, across three evaluations, is rarely chance. Without held-out
  // simulators (`evaluation.simulators`) the rule sees no scores and never trips.
  {
    kind: 'heldOutGapWidens',
    name: 'held-out-gap-widens',
    action: 'pause',
    evaluations: 3,
    rise: 5,
    fall: 5,
  },
];
