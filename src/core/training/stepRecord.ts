import type { Algorithm } from './algorithms.js';
import type { ReplySignals } from './replySignals.js';
import { creditedRewards, FINAL_CREDIT, turnRewards, type CreditSettings } from './credit.js';
import type { StepMetricsRecord, TrainerStepMetrics } from '../runMetrics.js';
import type { RewardEnvironment } from '../evaluationManifest.js';
import { mean, valueStats } from '../statistics/valueStats.js';
import { sumRateLimitWaits, type EndpointWaits, type RolloutSummary } from '../transcript.js';

export type StepEvalSummary = NonNullable<StepMetricsRecord['eval']>;

/** What a step's metrics line is made of. */
export interface StepRecordInput {
  runName: string;
  step: number;
  algorithm: Algorithm;
  /** ISO time the step was recorded. */
  time: string;
  /** The version the step's dialogues sampled from. */
  policyVersion: string;
  /** The dialogues the optimizer trained on (at least one). */
  kept: readonly (Pick<RolloutSummary, 'reward' | 'outcome' | 'turns'> & {
    rateLimitWaits?: EndpointWaits;
    changes?: number[];
    finalEmotion?: number;
  })[];
  /** The step's reply signals (absent from older optimizer results) and the previous evaluation's score. */
  replies?: ReplySignals;
  previousEvalScore?: number;
  /** The run's credit (absent: `final`). */
  credit?: CreditSettings;
  failed: number;
  dropped: number;
  trainer: TrainerStepMetrics;
  /** See StepMetricsRecord.publishLatencyMs; absent: not measured (recorded as absent). */
  publishLatencyMs?: number | null;
  /** See StepMetricsRecord.commitToAnswerMs; absent: not reported (recorded as absent). */
  commitToAnswerMs?: number | null;
  eval?: StepEvalSummary;
  /** The capability suites' scores of the step's evaluation (`evalSuites`). */
  capability?: StepMetricsRecord['capability'];
  /** What the step's rewards were measured in (absent: not recorded). */
  environment?: RewardEnvironment;
}

/** The step's line of `metrics.jsonl`: rates over the dialogues the optimizer trained on. */
export function stepMetricsRecord(input: StepRecordInput): StepMetricsRecord {
  const { kept } = input;
  const waits = sumRateLimitWaits(kept.map((s) => s.rateLimitWaits));
  const seconds = (ms: number) => Math.round(ms) / 1000;
  return {
    kind: 'attune.step',
    run: input.runName,
    step: input.step,
    algorithm: input.algorithm,
    time: input.time,
    policyVersion: input.policyVersion,
    rollouts: { ok: kept.length, failed: input.failed, dropped: input.dropped },
    reward: valueStats(kept.map((s) => s.reward)),
    successRate: kept.filter((s) => s.outcome === 'success').length / kept.length,
    failureRate: kept.filter((s) => s.outcome === 'failure').length / kept.length,
    malformedRate: kept.filter((s) => s.outcome === 'malformed').length / kept.length,
    meanTurns: mean(kept.map((s) => s.turns)),
    ...turnCreditStats(kept, input.credit ?? FINAL_CREDIT),
    trainer: input.trainer,
    ...(input.publishLatencyMs !== undefined ? { publishLatencyMs: input.publishLatencyMs } : {}),
    ...(input.commitToAnswerMs !== undefined ? { commitToAnswerMs: input.commitToAnswerMs } : {}),
    ...signalsOf(input),
    ...(waits
      ? {
          rateLimitWaits: {
            policy: { waits: waits.policy.waits, seconds: seconds(waits.policy.waitMs) },
            simulator: { waits: waits.simulator.waits, seconds: seconds(waits.simulator.waitMs) },
          },
        }
      : {}),
    ...(input.environment ? { environment: input.environment } : {}),
    ...(input.eval ? { eval: input.eval } : {}),
    ...(input.capability ? { capability: input.capability } : {}),
  };
}

/** The evaluation's headline numbers as the step records them. */
export function stepEvalSummary(
  evalId: string,
  summary: {
    score: number;
    success: number;
    failure: number;
    count: number;
    simulators?: NonNullable<StepEvalSummary['simulators']>;
  },
): StepEvalSummary {
  return {
    evalId,
    score: summary.score,
    success: summary.success,
    failure: summary.failure,
    count: summary.count,
    ...(summary.simulators
      ? { simulators: summary.simulators.map(({ name, score, count, gap }) => ({ name, score, count, gap })) }
      : {}),
  };
}

/**
 * Per-turn figures over the kept dialogues' assistant turns: each turn's own reward (its emotion
 * change / 100, the terminal part on the last) and the reward its sample is trained on under the
 * run's credit. Dialogues without recorded changes (older states) are left out.
 */
function turnCreditStats(
  kept: StepRecordInput['kept'],
  credit: CreditSettings,
): Pick<StepMetricsRecord, 'turnReward' | 'turnReturn'> {
  const own: number[] = [];
  const trained: number[] = [];
  for (const d of kept) {
    if (!d.changes || d.finalEmotion === undefined) continue;
    const input = { changes: d.changes, reward: d.reward, finalEmotion: d.finalEmotion };
    own.push(...turnRewards(input));
    trained.push(...creditedRewards(input, credit));
  }
  return own.length === 0 ? {} : { turnReward: valueStats(own), turnReturn: valueStats(trained) };
}

function signalsOf(input: StepRecordInput): Pick<StepMetricsRecord, 'signals'> {
  if (!input.replies) return {};
  const change =
    input.eval && input.previousEvalScore !== undefined ? input.eval.score - input.previousEvalScore : undefined;
  return { signals: { ...input.replies, ...(change !== undefined ? { evalChange: change } : {}) } };
}
