import type { Algorithm } from './training/algorithms.js';
import type { ReplySignals } from './training/replySignals.js';
import type { ValueStats } from './statistics/valueStats.js';
import type { RewardEnvironment } from './evaluationManifest.js';
import type { CapabilityStepScore } from './capability/retention.js';

/** The trainer's per-step metrics (POST /v1/runs/{run}/steps response). */
export interface TrainerStepMetrics {
  loss: number;
  policy_loss: number;
  value_loss: number;
  kl: number;
  entropy: number;
  clip_fraction: number;
  grad_norm: number;
  reward_mean: number;
  advantage_mean: number;
  tokens: number;
  seconds: number;
  /**
   * Mean and max |sampler log-prob - trainer log-prob| over the completion tokens of samples that
   * carried the sampler's (before the update, same weights: about 0 in fp32); null when none did.
   * Absent in records of trainers that did not report them.
   */
  logprob_gap_mean?: number | null;
  logprob_gap_max?: number | null;
  /** Share of the step's samples trained on re-tokenised text rather than the sampled ids. */
  retokenized_share?: number;
  /**
   * Off-policy correction: samples per staleness (steps between the sampling version and the one
   * trained), and the sampler-to-trainer importance weights before truncation; null without
   * sampler log-probs. Absent in records of trainers that did not report them.
   */
  staleness_histogram?: Record<string, number>;
  is_weight_mean?: number | null;
  is_weight_max?: number | null;
  is_truncated_share?: number | null;
}

/** One line of `runs/<run>/metrics.jsonl` in the artifact store, appended after each step. */
export interface StepMetricsRecord {
  kind: 'attune.step';
  run: string;
  step: number;
  algorithm: Algorithm;
  time: string;
  /** The policy version the step's rollouts sampled from (e.g. run@step-1). */
  policyVersion: string;
  rollouts: { ok: number; failed: number; dropped: number };
  reward: ValueStats;
  successRate: number;
  failureRate: number;
  malformedRate: number;
  meanTurns: number;
  /**
   * Over the step's assistant turns: each turn's own reward (emotion change / 100) and the reward
   * its sample was trained on under `training.credit` (= the dialogue's reward with `final`).
   * Absent in records written before they existed.
   */
  turnReward?: ValueStats;
  turnReturn?: ValueStats;
  trainer: TrainerStepMetrics;
  /**
   * The step's replies (replySignals.ts) and, on a step that evaluated after an earlier
   * evaluation, the score's change: what the guardrails watch. Absent in older records.
   */
  signals?: ReplySignals & { evalChange?: number };
  /** Guardrails that tripped on this step (absent: none). */
  guardrails?: { rule: string; action: 'warn' | 'pause'; message: string }[];
  /** Present when the kept dialogues' calls waited for a tokens-per-minute budget: per endpoint, how often and how long. */
  rateLimitWaits?: { policy: { waits: number; seconds: number }; simulator: { waits: number; seconds: number } };
  /**
   * Milliseconds from the publish's start (it learns of the committed step) to the first token vLLM
   * served from the new version (`training.publish.mode: vllm`: load, listing, then a one-token
   * completion of `run@step`), both read on the publishing host's clock; with replicas, the slowest
   * replica's. Null with `publish.mode: trainer` (the trainer serves the weights it just committed,
   * nothing is loaded) and in results recorded before the publisher timed itself. Absent in
   * records written before it was measured.
   */
  publishLatencyMs?: number | null;
  /**
   * Milliseconds from the trainer's commit of the step to its answer, on the trainer's clock. Null
   * when the step was applied earlier (a retried post got the stored result) or the trainer did not
   * report it; absent in older records.
   */
  commitToAnswerMs?: number | null;
  /**
   * The environment the step's rewards were measured in (simulator, its prompts, the protocol): a
   * reward means something only beside it. Absent in records written before it was recorded.
   */
  environment?: RewardEnvironment;
  /**
   * Present on steps that ran an evaluation. `simulators`: each simulator's score and its gap to the
   * training simulator's, the training simulator first, where held-out simulators are configured.
   */
  eval?: {
    evalId: string;
    score: number;
    success: number;
    failure: number;
    count: number;
    simulators?: { name: string; score: number; count: number; gap: number }[];
  };
  /**
   * Present on evaluation steps of a run with `training.evalSuites`: each capability suite's score on
   * the same version, with the base policy's. Apart from `eval`: a failed Sentient evaluation keeps them.
   */
  capability?: CapabilityStepScore[];
  /**
   * Steps that take the first finished dialogues: the ids this step took (in the order they
   * finished), how many of them an earlier step had started, and the ids dropped (stale, short
   * group) or failed since the step before took its dialogues (`omitted`: past the lists' bound).
   */
  dialogues?: {
    taken: string[];
    carriedOver: number;
    droppedStale: string[];
    droppedShortGroup: string[];
    failed: string[];
    omitted: number;
  };
}

/**
 * Parses a run's metrics log: blank lines skipped, a bad line noted (a crash while writing could
 * leave half a line), the last record of each step wins; `source` names the file in the notes.
 */
export function parseStepRecords(text: string, source: string): { steps: StepMetricsRecord[]; notes: string[] } {
  const notes: string[] = [];
  const bySteps = new Map<number, StepMetricsRecord>();
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      notes.push(`${source} line ${i + 1}: not valid JSON (skipped)`);
      return;
    }
    const record = value as StepMetricsRecord | null;
    if (
      typeof record !== 'object' ||
      record === null ||
      typeof record.step !== 'number' ||
      typeof record.reward !== 'object'
    ) {
      notes.push(`${source} line ${i + 1}: not a step record`);
      return;
    }
    bySteps.set(record.step, record);
  });
  return { steps: [...bySteps.values()].sort((a, b) => a.step - b.step), notes };
}

/** The metrics log with `record` in it, one line per step: idempotent by step, bad lines dropped. */
export function withStepRecord(text: string, record: StepMetricsRecord): string {
  const steps = parseStepRecords(text, 'metrics').steps.filter((r) => r.step !== record.step);
  return [...steps, record]
    .sort((a, b) => a.step - b.step)
    .map((r) => `${JSON.stringify(r)}\n`)
    .join('');
}

/**
 * The version the run's last step published. A step samples from the version before it (step N
 * from `run@N-1`), so the last record's `policyVersion` is one behind the newest weights.
 */
export function latestPublishedVersion(run: string, steps: StepMetricsRecord[]): string | null {
  const last = steps[steps.length - 1];
  return last ? `${run}@${last.step}` : null;
}
