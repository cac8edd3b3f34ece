import { ApplicationFailure } from '@temporalio/common';
import type { Algorithm } from './algorithms.js';
import {
  checkRequirements,
  LIVE_HYPERPARAMETERS,
  parseLiveSet,
  type LiveHyperparameterName,
  type LiveSettings,
} from './liveSet.js';

/** The run settings an operator may override while it runs (`attune set`). */
export interface AdjustableSettings {
  steps: number;
  maxInFlight: number;
  maxFailedShare: number;
  evalEvery: number;
}

/** The settings in force now: the operator's value where one was set, else the run's. */
export function settingsInForce(settings: AdjustableSettings, live: LiveSettings): AdjustableSettings {
  return {
    steps: live.steps ?? settings.steps,
    maxInFlight: live.maxInFlight ?? settings.maxInFlight,
    maxFailedShare: live.maxFailedShare ?? settings.maxFailedShare,
    evalEvery: live.evalEvery ?? settings.evalEvery,
  };
}

/**
 * Rejects an `attune set` change before it is applied: bad values (with the reason), settings the
 * run's algorithm has no use for, and a step count below the steps already applied.
 */
export function checkLiveSet(pairs: Record<string, unknown>, stepsApplied: number, algorithm: Algorithm): void {
  const change = parseLiveSet(pairs);
  checkRequirements(change, algorithm);
  if (change.steps !== undefined && change.steps < stepsApplied)
    throw ApplicationFailure.nonRetryable(
      `steps: ${change.steps} is below the ${stepsApplied} steps already applied`,
      'InvalidLiveSetting',
    );
}

/** The live settings after an `attune set` change: the new values over the earlier ones. */
export function applyLiveSet(live: LiveSettings, pairs: Record<string, unknown>): LiveSettings {
  return { ...live, ...parseLiveSet(pairs) };
}

export type LiveHyperparameters = Partial<Record<LiveHyperparameterName, number>>;

/** The operator's hyperparameters for the next optimizer step, or undefined when none was set. */
export function liveHyperparameters(live: LiveSettings): LiveHyperparameters | undefined {
  const hyperparameters: LiveHyperparameters = Object.fromEntries(
    Object.entries(live).filter(([key]) => (LIVE_HYPERPARAMETERS as readonly string[]).includes(key)),
  );
  return Object.keys(hyperparameters).length > 0 ? hyperparameters : undefined;
}
