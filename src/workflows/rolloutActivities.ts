import {
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  type ActivityInterfaceFor,
  type LocalActivityInterfaceFor,
} from '@temporalio/workflow';
import type {
  ArtifactActivities,
  DialogueTurnActivities,
  PolicyActivities,
  SimulatorActivities,
} from '../activities/index.js';
import type { ScenarioRef } from '../activities/scenarios.js';
import type { RetryPolicySettings, RolloutSettings } from '../core/rolloutSettingsSchema.js';
import * as timeline from '../core/rolloutTimeline.js';
import type { Scenario } from '../core/scenario.js';
import { LIMITS } from '../config/limits.js';
import type { Say } from './rolloutView.js';
import { summarisedCall } from './summarisedCall.js';

/**
 * Where a rollout's activities run, the execution set-ups as small adapters: LLM calls as activities
 * on a task queue or as local activities in the rollout worker (`settings.llmCalls`), one activity
 * per call or per turn (`settings.activityPer`).
 */

/** Rollouts with local LLM calls started after this patch load and save artifacts locally too. */
export const LOCAL_ARTIFACT_ACTIVITIES_PATCH = 'local-artifact-activities';

/** Activities as the workflow calls them, on a task queue or in the rollout worker. */
export type ActivityProxy<T> = ActivityInterfaceFor<T> | LocalActivityInterfaceFor<T>;

/** The HTTP timeout plus headroom for queueing in the worker; short enough that a dead worker's call is retried soon. */
function activityTimeoutFor(httpTimeoutMs: number): number {
  return Math.ceil(httpTimeoutMs * 1.25) + 1000;
}

function retryOptions(retry: RetryPolicySettings) {
  return {
    initialInterval: retry.initialIntervalMs,
    backoffCoefficient: retry.backoffCoefficient,
    maximumInterval: retry.maximumIntervalMs,
    // 0 means unlimited: the SDK wants the field left out for that.
    ...(retry.maximumAttempts > 0 ? { maximumAttempts: retry.maximumAttempts } : {}),
    nonRetryableErrorTypes: ['LlmRequestRejected', 'UnparseableSimulatorOutput'],
  };
}

/** Retries of a turn activity: as patient as the more patient of its two endpoints. */
function turnRetry(settings: RolloutSettings): RetryPolicySettings {
  const a = settings.policy.retry;
  const b = settings.simulator.retry;
  return {
    initialIntervalMs: Math.min(a.initialIntervalMs, b.initialIntervalMs),
    backoffCoefficient: Math.max(a.backoffCoefficient, b.backoffCoefficient),
    maximumIntervalMs: Math.max(a.maximumIntervalMs, b.maximumIntervalMs),
    maximumAttempts:
      a.maximumAttempts === 0 || b.maximumAttempts === 0 ? 0 : Math.max(a.maximumAttempts, b.maximumAttempts),
  };
}

/** The activity that plays a whole turn (`activityPer: turn`). */
export function turnActivities(settings: RolloutSettings, local: boolean): ActivityProxy<DialogueTurnActivities> {
  const options = {
    // Waits for endpoint slots count against the timeout too; the HTTP timeouts bound each call.
    startToCloseTimeout: LIMITS.turnActivityTimeoutMs,
    retry: retryOptions(turnRetry(settings)),
  };
  if (local) return proxyLocalActivities<DialogueTurnActivities>(options);
  if (!settings.turnsTaskQueue)
    throw ApplicationFailure.nonRetryable(
      'rollout settings with activityPer=turn need turnsTaskQueue',
      'BadRolloutInput',
    );
  // A dead worker is noticed as soon as its single call would be, or within the turn heartbeat timeout.
  const heartbeatTimeout = Math.min(
    LIMITS.turnHeartbeatTimeoutMs,
    activityTimeoutFor(Math.min(settings.policy.timeoutMs, settings.simulator.timeoutMs)),
  );
  return proxyActivities<DialogueTurnActivities>({ ...options, taskQueue: settings.turnsTaskQueue, heartbeatTimeout });
}

/**
 * A call may first wait for its endpoint's slot in the worker (a local call) or for the endpoint's
 * token budget (any call), and those waits count against the activity's timeout; the HTTP timeout
 * inside still bounds the call itself.
 */
function waitingOptions<T extends { startToCloseTimeout: number }>(options: T): T {
  return { ...options, startToCloseTimeout: Math.max(options.startToCloseTimeout, LIMITS.llmCallTimeoutMs) };
}

/** One endpoint's calls: a local activity, or an activity on the endpoint's queue. */
function llmCallProxy<T>(
  options: { startToCloseTimeout: number; retry: ReturnType<typeof retryOptions> },
  local: boolean,
  taskQueue: string,
): ActivityProxy<T> {
  if (local) return proxyLocalActivities<T>(waitingOptions(options));
  // A queued call heartbeats while it waits: a dead worker's call moves on in seconds.
  return proxyActivities<T>({
    ...waitingOptions(options),
    heartbeatTimeout: LIMITS.llmCallHeartbeatTimeoutMs,
    taskQueue,
  });
}

/** The policy's and the simulator's calls, one activity per call. */
export function llmCallActivities(
  settings: RolloutSettings,
  local: boolean,
): { policy: ActivityProxy<PolicyActivities>; simulator: ActivityProxy<SimulatorActivities> } {
  const policyOptions = {
    startToCloseTimeout: activityTimeoutFor(settings.policy.timeoutMs),
    retry: retryOptions(settings.policy.retry),
  };
  const simulatorOptions = {
    // The analysis activity may ask again after an unparseable answer, within one attempt.
    startToCloseTimeout: activityTimeoutFor(settings.simulator.timeoutMs) * (settings.simulator.parseRetries + 1),
    retry: retryOptions(settings.simulator.retry),
  };
  return {
    policy: llmCallProxy<PolicyActivities>(policyOptions, local, settings.policy.taskQueue),
    simulator: llmCallProxy<SimulatorActivities>(simulatorOptions, local, settings.simulator.taskQueue),
  };
}

/**
 * The scenario load and the transcript writes. With local LLM calls they run as local activities
 * too: the rollout worker hosts them anyway, and each saves a dialogue two server round trips (the
 * patch keeps rollouts started before this change replaying their artifact activities).
 */
export function artifactActivities(settings: RolloutSettings, local: boolean): ActivityProxy<ArtifactActivities> {
  return local && patched(LOCAL_ARTIFACT_ACTIVITIES_PATCH)
    ? proxyLocalActivities<ArtifactActivities>(artifactOptions(settings))
    : queuedArtifactActivities(settings);
}

/** The artifact activities on the rollouts queue, whatever `settings.llmCalls` says. */
export function queuedArtifactActivities(settings: RolloutSettings): ActivityInterfaceFor<ArtifactActivities> {
  return proxyActivities<ArtifactActivities>({ ...artifactOptions(settings), taskQueue: settings.artifactsTaskQueue });
}

function artifactOptions(settings: RolloutSettings) {
  // A store out of reach past these retries makes the write wait for the operator (the rollout's gate).
  const artifactRetry = settings.artifactStore?.retry;
  return {
    startToCloseTimeout: LIMITS.artifactActivityTimeoutMs,
    retry: artifactRetry ? retryOptions(artifactRetry) : { maximumAttempts: 10 },
  };
}

/** The scenario given, or the one its reference names, loaded by an activity. */
export async function scenarioOf(
  input: { scenario?: Scenario; scenarioRef?: ScenarioRef },
  artifacts: ActivityProxy<ArtifactActivities>,
  say: Say,
): Promise<Scenario> {
  if (input.scenario) return input.scenario;
  const ref = input.scenarioRef;
  if (!ref) throw ApplicationFailure.nonRetryable('rollout input needs scenario or scenarioRef', 'BadRolloutInput');
  return summarisedCall(
    artifacts.loadScenario,
    say(() => timeline.scenarioLoadSummary(ref.id)),
  )(ref);
}
