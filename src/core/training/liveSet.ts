/**
 * Operator changes to a live run (`attune set NAME key=value`), validated inside the training
 * workflow's update handler.
 *
 * Why not zod here: everything the workflow bundle imports is evaluated again for each new workflow
 * execution in the worker's sandbox, rollouts included, so zod in the bundle would delay every
 * rollout's first LLM call. The bundle stays free of zod, and this small table carries the bounds:
 * the hyperparameters' rules are generated from the trainer's models (liveHyperparameters.generated.ts),
 * the orchestrator's own settings are declared here, with test/training/liveSet.test.ts checking
 * them against their zod fields.
 */

import { ApplicationFailure } from '@temporalio/common';
import { meets, type Algorithm, type Requirement } from './algorithms.js';
import { LIVE_HYPERPARAMETER_RULES } from './liveHyperparameters.generated.js';

export type LiveHyperparameterName = keyof typeof LIVE_HYPERPARAMETER_RULES;

/** Hyperparameters an operator may change on a live run (applied from the next step). */
export const LIVE_HYPERPARAMETERS = Object.keys(LIVE_HYPERPARAMETER_RULES) as LiveHyperparameterName[];

interface NumberRule {
  int?: boolean;
  /** Inclusive bounds. */
  min?: number;
  max?: number;
  /** Exclusive bounds. */
  gt?: number;
  lt?: number;
  /** What the run must have for the setting to mean anything. */
  needs?: Requirement;
}

const REASONS: Record<Requirement, (algorithm: Algorithm) => string> = {
  critic: (algorithm) => `tunes the critic, and ${algorithm} trains none`,
};

export const LIVE_SETTINGS_RULES = {
  ...LIVE_HYPERPARAMETER_RULES,
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

/** Throws, naming each setting and why, when the change sets something the run's algorithm cannot use. */
export function checkRequirements(change: LiveSettings, algorithm: Algorithm): void {
  const problems: string[] = [];
  for (const key of Object.keys(change) as LiveSettingName[]) {
    const needs = (LIVE_SETTINGS_RULES[key] as NumberRule).needs;
    if (needs !== undefined && !meets(algorithm, needs)) problems.push(`${key}: ${REASONS[needs](algorithm)}`);
  }
  if (problems.length > 0) throw ApplicationFailure.nonRetryable(problems.join('; '), 'InvalidLiveSetting');
}
