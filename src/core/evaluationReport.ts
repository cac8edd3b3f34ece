import type { DialogueKey } from './dialogueKeys.js';
import type { EvaluationManifest, RewardEnvironment } from './evaluationManifest.js';
import { evaluationIntervals, type EvaluationIntervals, type Interval } from './evaluationStatistics.js';
import type { GoalType, Personality } from './scenario.js';
import type { Outcome } from './termination.js';
import type { RolloutSettings } from './rolloutSettingsSchema.js';
import { emptyTotals, type RolloutSummary, type TokenTotals } from './transcript.js';

/** Which of a scenario's dialogues an entry is: repeat 0 (absent in older reports) and its seed. */
interface RepeatOf {
  repeat?: number;
  seed?: number;
}

/** One dialogue of an evaluation: a finished dialogue, or a dialogue that failed (excluded from the score). */
export type EvaluationEntry = RepeatOf &
  (
    | {
        status: 'ok';
        scenarioId: string;
        goalType: GoalType;
        personality: Personality;
        finalEmotion: number;
        outcome: Outcome;
        turns: number;
        emotions: number[];
        tokens: TokenTotals;
        artifact: string;
        /** The scenario's content hash as the dialogue loaded it; absent in older reports. */
        scenarioHash?: string;
      }
    | { status: 'failed'; scenarioId: string; goalType: GoalType; personality: Personality; error: string }
  );

export interface ScoreGroup {
  count: number;
  /** Mean final emotion (the Sentient score) of the group's finished dialogues. */
  score: number;
  success: number;
  failure: number;
  meanTurns: number;
}

/** The dialogue settings (every one dialogueFields declares) and the simulator's temperature. */
export type EvaluationSettingsSummary = Pick<RolloutSettings, DialogueKey> & { simulatorTemperature: number };

export interface EvaluationReport {
  kind: 'attune.evaluation';
  version: 1;
  evalId: string;
  createdAt: string;
  policyModel: string;
  simulatorModel: string;
  /** Where the scenarios came from (a directory or a split name). */
  scenarios: string;
  settings: EvaluationSettingsSummary;
  /** Sentient score: mean final emotion over the finished dialogues. */
  score: number;
  /** Dialogues that reached 100. */
  success: number;
  /** Dialogues that ended below 10. */
  failure: number;
  /** Finished dialogues (the score's denominator). */
  count: number;
  /** Dialogues that failed to run: reported, excluded from the score. */
  failed: number;
  meanTurns: number;
  tokens: TokenTotals;
  byGoalType: Record<string, ScoreGroup>;
  byPersonality: Record<string, ScoreGroup>;
  results: EvaluationEntry[];
  runName: string | null;
  step: number | null;
  /** Dialogues per scenario, each with its own simulator seed. */
  repeats: number;
  /** 95 % bootstrap interval of the score. */
  ci: Interval;
  /** Intervals of score, success and failure rates, overall and per group. */
  intervals: EvaluationIntervals;
  /** Protocol, endpoints, prompt hash, seeds and version; null in reports written before manifests. */
  manifest: EvaluationManifest | null;
  /**
   * Each simulator's score, the training simulator's first, where held-out simulators were
   * configured (`evaluation.simulators`); absent otherwise. The report's own numbers are the
   * training simulator's.
   */
  simulators?: SimulatorScore[];
}

export const SUCCESS_EMOTION = 100;
export const FAILURE_EMOTION = 10;

function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function scoreGroup(entries: EvaluationEntry[]): ScoreGroup {
  const ok = entries.filter((e): e is Extract<EvaluationEntry, { status: 'ok' }> => e.status === 'ok');
  const count = ok.length;
  return {
    count,
    score: count === 0 ? 0 : round(ok.reduce((sum, e) => sum + e.finalEmotion, 0) / count),
    success: ok.filter((e) => e.finalEmotion >= SUCCESS_EMOTION).length,
    failure: ok.filter((e) => e.finalEmotion < FAILURE_EMOTION).length,
    meanTurns: count === 0 ? 0 : round(ok.reduce((sum, e) => sum + e.turns, 0) / count),
  };
}

function groupBy(entries: EvaluationEntry[], key: (e: EvaluationEntry) => string): Record<string, ScoreGroup> {
  const groups = new Map<string, EvaluationEntry[]>();
  for (const entry of entries) groups.set(key(entry), [...(groups.get(key(entry)) ?? []), entry]);
  return Object.fromEntries(
    [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, scoreGroup(v)]),
  );
}

export function entryFromSummary(summary: RolloutSummary): EvaluationEntry {
  return {
    status: 'ok',
    scenarioId: summary.scenarioId,
    goalType: summary.goalType,
    personality: summary.personality,
    finalEmotion: summary.finalEmotion,
    outcome: summary.outcome,
    turns: summary.turns,
    emotions: summary.emotions,
    tokens: summary.tokens,
    artifact: summary.artifact,
    ...(summary.scenarioHash !== undefined ? { scenarioHash: summary.scenarioHash } : {}),
  };
}

/** What an evaluation is built from: its dialogues and their context. */
export type EvaluationReportInput = Omit<
  EvaluationReport,
  | 'kind'
  | 'version'
  | 'score'
  | 'success'
  | 'failure'
  | 'count'
  | 'failed'
  | 'meanTurns'
  | 'tokens'
  | 'byGoalType'
  | 'byPersonality'
  | 'repeats'
  | 'ci'
  | 'intervals'
  | 'manifest'
> & { repeats?: number; manifest?: EvaluationManifest | null };

/**
 * The Sentient-score arithmetic: pure, so it is tested against hand-made results. Counts and
 * means only; the bootstrap intervals come from `completeEvaluationReport`, which the activity that
 * stores the report runs, so the workflow does not resample on every replay.
 */
export function evaluationReportCounts(base: EvaluationReportInput): StoredEvaluationReport {
  const overall = scoreGroup(base.results);
  const tokens = emptyTotals();
  for (const entry of base.results) {
    if (entry.status !== 'ok') continue;
    tokens.policyPrompt += entry.tokens.policyPrompt;
    tokens.policyCompletion += entry.tokens.policyCompletion;
    tokens.simulatorPrompt += entry.tokens.simulatorPrompt;
    tokens.simulatorCompletion += entry.tokens.simulatorCompletion;
  }
  return {
    kind: 'attune.evaluation',
    version: 1,
    ...base,
    score: overall.score,
    success: overall.success,
    failure: overall.failure,
    count: overall.count,
    failed: base.results.filter((e) => e.status === 'failed').length,
    meanTurns: overall.meanTurns,
    tokens,
    byGoalType: groupBy(base.results, (e) => e.goalType),
    byPersonality: groupBy(base.results, (e) => e.personality),
    repeats: base.repeats ?? 1,
    manifest: base.manifest ?? null,
  };
}

/** The whole report: counts, means and the intervals. */
export function buildEvaluationReport(base: EvaluationReportInput): EvaluationReport {
  return completeEvaluationReport(evaluationReportCounts(base));
}

/** The score's interval and every group's intervals, from the finished dialogues. */
export function evaluationStatistics(results: EvaluationEntry[]): Pick<EvaluationReport, 'ci' | 'intervals'> {
  const ok = results.filter((e): e is Extract<EvaluationEntry, { status: 'ok' }> => e.status === 'ok');
  const intervals = evaluationIntervals(
    ok,
    (emotion) => emotion >= SUCCESS_EMOTION,
    (emotion) => emotion < FAILURE_EMOTION,
  );
  return { ci: intervals.overall.score, intervals };
}

/** A report as stored: those written before repeats and manifests lack their fields. */
export type StoredEvaluationReport = Omit<EvaluationReport, 'repeats' | 'ci' | 'intervals' | 'manifest'> &
  Partial<Pick<EvaluationReport, 'repeats' | 'ci' | 'intervals' | 'manifest'>>;

/**
 * Fills in what an older report lacks: its intervals from its results, one repeat, no manifest; and
 * each simulator's interval (the training simulator's is the report's).
 */
export function completeEvaluationReport(stored: StoredEvaluationReport): EvaluationReport {
  const statistics =
    stored.ci && stored.intervals
      ? { ci: stored.ci, intervals: stored.intervals }
      : evaluationStatistics(stored.results);
  return {
    ...stored,
    ...statistics,
    repeats: stored.repeats ?? 1,
    manifest: stored.manifest ?? null,
    ...(stored.simulators
      ? {
          simulators: stored.simulators.map((s) =>
            s.ci ? s : { ...s, ci: s.training ? statistics.ci : evaluationStatistics(s.results ?? []).ci },
          ),
        }
      : {}),
  };
}

/**
 * One simulator's Sentient score of an evaluation's dialogues. A policy that learned its training
 * simulator's quirks scores well there and worse with a held-out one: `gap` shows it.
 */
export interface SimulatorScore extends ScoreGroup {
  name: string;
  /** Whether this is the training simulator; its dialogues are the report's own `results`. */
  training: boolean;
  /** What this simulator's scores were measured in: endpoint, model (as served), prompts, protocol. */
  environment: RewardEnvironment;
  /** Dialogues that failed to run: reported, excluded from the score. */
  failed: number;
  /** The training simulator's score minus this one's: 0 for the training simulator itself. */
  gap: number;
  /** 95 % bootstrap interval of the score; added where the report is stored. */
  ci?: Interval;
  /** A held-out simulator's dialogues (the training simulator's are the report's `results`). */
  results?: EvaluationEntry[];
}
