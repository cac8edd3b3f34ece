import { clusterBootstrapInterval, DEFAULT_LEVEL, DEFAULT_RESAMPLES, type Interval } from './statistics/bootstrap.js';
import type { GoalType, Personality } from './scenario.js';

export type { Interval };

/** What the statistics need of a finished dialogue. */
export interface ScoredDialogue {
  scenarioId: string;
  goalType: GoalType;
  personality: Personality;
  finalEmotion: number;
}

export interface RateWithInterval {
  /** A fraction of the finished dialogues, 0..1. */
  value: number;
  ci: Interval;
}

export interface GroupIntervals {
  dialogues: number;
  scenarios: number;
  /** Interval of the Sentient score (mean final emotion). */
  score: Interval;
  successRate: RateWithInterval;
  failureRate: RateWithInterval;
}

export interface EvaluationIntervals {
  level: number;
  method: string;
  resamples: number;
  overall: GroupIntervals;
  byGoalType: Record<string, GroupIntervals>;
  byPersonality: Record<string, GroupIntervals>;
}

export const INTERVAL_METHOD = 'percentile bootstrap over scenarios (each scenario with all its repeats)';

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

function roundInterval(ci: Interval, digits: number): Interval {
  return { low: round(ci.low, digits), high: round(ci.high, digits) };
}

/** Values per scenario, scenarios in id order so the resampling does not depend on result order. */
function clusters(dialogues: readonly ScoredDialogue[], value: (d: ScoredDialogue) => number): number[][] {
  const byScenario = new Map<string, number[]>();
  for (const d of dialogues) byScenario.set(d.scenarioId, [...(byScenario.get(d.scenarioId) ?? []), value(d)]);
  return [...byScenario.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, values]) => values);
}

export function groupIntervals(
  dialogues: readonly ScoredDialogue[],
  success: (emotion: number) => boolean,
  failure: (emotion: number) => boolean,
): GroupIntervals {
  const count = dialogues.length;
  // No finished dialogue: the group's score is reported as 0 (scoreGroup), its interval as [0, 0].
  if (count === 0) {
    const none = { low: 0, high: 0 };
    return {
      dialogues: 0,
      scenarios: 0,
      score: none,
      successRate: { value: 0, ci: none },
      failureRate: { value: 0, ci: none },
    };
  }
  const rate = (hit: (emotion: number) => boolean): RateWithInterval => ({
    value: count === 0 ? 0 : round(dialogues.filter((d) => hit(d.finalEmotion)).length / count, 4),
    ci: roundInterval(clusterBootstrapInterval(clusters(dialogues, (d) => (hit(d.finalEmotion) ? 1 : 0))), 4),
  });
  return {
    dialogues: count,
    scenarios: new Set(dialogues.map((d) => d.scenarioId)).size,
    score: roundInterval(clusterBootstrapInterval(clusters(dialogues, (d) => d.finalEmotion)), 2),
    successRate: rate(success),
    failureRate: rate(failure),
  };
}

/** Bootstrap intervals (95 %) of score, success and failure rates: overall, per goal type, per personality. */
export function evaluationIntervals(
  dialogues: readonly ScoredDialogue[],
  success: (emotion: number) => boolean,
  failure: (emotion: number) => boolean,
): EvaluationIntervals {
  const grouped = (key: (d: ScoredDialogue) => string): Record<string, GroupIntervals> => {
    const groups = new Map<string, ScoredDialogue[]>();
    for (const d of dialogues) groups.set(key(d), [...(groups.get(key(d)) ?? []), d]);
    return Object.fromEntries(
      [...groups.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, members]) => [name, groupIntervals(members, success, failure)]),
    );
  };
  return {
    level: DEFAULT_LEVEL,
    method: INTERVAL_METHOD,
    resamples: DEFAULT_RESAMPLES,
    overall: groupIntervals(dialogues, success, failure),
    byGoalType: grouped((d) => d.goalType),
    byPersonality: grouped((d) => d.personality),
  };
}
