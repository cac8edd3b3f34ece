/**
 * Operator changes to a live run (`attune set NAME key=value`), validated inside the training
 * workflow's update handler.
 *
 * Why not zod here: everything the workflow bundle imports is evaluated again for each new workflow
 * execution in the worker's sandbox, rollouts included, so zod in the bundle would delay every
 * rollout's first LLM call. The bundle stays free of zod, and this small table carries the bounds;
 * the zod schemas stay their source: test/training/liveSet.test.ts checks the table against them.
 */

import { ApplicationFailure } from '@temporalio/common';

/** Hyperparameters an operator may change on a live run (applied from the next step). */
export const LIVE_HYPERPARAMETERS = [
  'learning_rate',
  'clip_ratio',
  'kl_coef',
  'entropy_coef',
  'value_learning_rate',
  'max_grad_norm',
] as const;

interface NumberRule {
  int?: boolean;
  /** Inclusive bounds. */
  min?: number;
  max?: number;
  /** Exclusive bounds. */
  gt?: number;
  lt?: number;
}

export const LIVE_SETTINGS_RULES = {
  learning_rate: { gt: 0, max: 1 },
  clip_ratio: { gt: 0, lt: 1 },
  kl_coef: { min: 0 },
  entropy_coef: { min: 0 },
  value_learning_rate: { gt: 0, max: 1 },
  max_grad_norm: { gt: 0 },
  maxInFlight: { int: true, min: 1, max: 1000 },
  maxFailedShare: { min: 0, max: 1 },
  evalEvery: { int: true, min: 0 },
  steps: { int: true, min: 1 },
  temperature: { min: 0, max: 2 },
} as const satisfies Record<string, NumberRule>;

export type LiveSettingName = keyof typeof LIVE_SETTINGS_RULES;
export type LiveSettings = Partial<Record<LiveSettingName, number>>;

function problemWith(value: unknown, rule: NumberRule): string | null {
  if (typeof value !== 'number' || !Number.isFinite(value))
    return `expected a number, got ${JSON.stringify(value) ?? String(value)}`;
  if (rule.int && !Number.isInteger(value)) return `expected an integer, got ${value}`;
  if (rule.min !== undefined && value < rule.min) return `must be at least ${rule.min}, got ${value}`;
  if (rule.max !== undefined && value > rule.max) return `must be at most ${rule.max}, got ${value}`;
  if (rule.gt !== undefined && value <= rule.gt) return `must be greater than ${rule.gt}, got ${value}`;
  if (rule.lt !== undefined && value >= rule.lt) return `must be less than ${rule.lt}, got ${value}`;
  return null;
}

/** Parses `key=value` pairs into a validated change, or throws with the reason for each bad pair. */
export function parseLiveSet(pairs: Record<string, unknown>): LiveSettings {
  const allowed = Object.keys(LIVE_SETTINGS_RULES);
  const problems: string[] = [];
  const unknown = Object.keys(pairs).filter((key) => !Object.hasOwn(LIVE_SETTINGS_RULES, key));
  if (unknown.length > 0)
    problems.push(`${unknown.join(', ')}: cannot be changed on a live run (allowed: ${allowed.join(', ')})`);
  const change: LiveSettings = {};
  for (const [key, rule] of Object.entries(LIVE_SETTINGS_RULES) as [LiveSettingName, NumberRule][]) {
    if (!Object.hasOwn(pairs, key) || pairs[key] === undefined) continue;
    const problem = problemWith(pairs[key], rule);
    if (problem) problems.push(`${key}: ${problem}`);
    else change[key] = pairs[key] as number;
  }
  if (problems.length > 0) throw ApplicationFailure.nonRetryable(problems.join('; '), 'InvalidLiveSetting');
  return change;
}
