import { proxyActivities, patched, ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import type { PublisherActivities, ReplicaPublishResult } from '../activities/publisher.js';
import type { Replica, TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import { LIMITS } from '../config/limits.js';
import { replicasToPublish } from '../core/training/replicaInTurn.js';
import { failureMessage } from './fanOut.js';
import { unloadOf } from './publishInput.js';
import type { TrainingControl } from './trainingControl.js';

/** Failures a retry of the same publish cannot mend: the operator fixes the replica, the trainer or the key, then resumes. */
const FINAL_PUBLISH_FAILURES = [
  'PublishRefused',
  'PublishRejected',
  'AdapterMissing',
  'TrainerRejected',
  'TrainerBadResponse',
];

/**
 * The replica's publish activity, on its publisher's queue: a publisher that does not take it within
 * `publisherWaitMs` (none polls the queue) fails it at once, and so do `LIMITS.replicaPublishAttempts`
 * failed attempts (the replica's vLLM or the trainer down).
 */
function publisherOf(settings: TrainingSettings, replica: Replica) {
  return proxyActivities<PublisherActivities>({
    taskQueue: replica.taskQueue,
    scheduleToStartTimeout: settings.publish.publisherWaitMs ?? LIMITS.publisherWaitMs,
    startToCloseTimeout: LIMITS.replicaPublishTimeoutMs,
    heartbeatTimeout: LIMITS.replicaPublishHeartbeatTimeoutMs,
    retry: {
      initialInterval: '2 seconds',
      maximumInterval: '30 seconds',
      maximumAttempts: LIMITS.replicaPublishAttempts,
      nonRetryableErrorTypes: FINAL_PUBLISH_FAILURES,
    },
  });
}

/** Why a replica's publish failed, naming the replica, its URL and its queue. */
function replicaFailure(settings: TrainingSettings, replica: Replica, error: unknown): string {
  const where = `replica ${replica.name} (${replica.baseURL})`;
  if (error instanceof ActivityFailure && error.cause instanceof TimeoutFailure) {
    if (error.cause.timeoutType === 'SCHEDULE_TO_START') {
      const seconds = Math.round((settings.publish.publisherWaitMs ?? LIMITS.publisherWaitMs) / 1000);
      return `${where}: no publisher worker took the publish from queue ${replica.taskQueue} within ${seconds} s (start \`attune worker --role publisher --replica ${replica.name}\` beside it)`;
    }
    return `${where}: the publish timed out (${error.cause.timeoutType})`;
  }
  const cause = error instanceof ActivityFailure && error.cause ? error.cause : error;
  return `${where}: ${failureMessage(cause)}`;
}

export interface ReplicasPublished {
  version: string;
  /** The slowest replica's publish, from its start to the first token on its own clock; null when one was not measured. */
  publishMs: number | null;
}

/**
 * Publishes the step to every replica at once (with `replicaUpdates: inTurn`, to the one whose turn
 * it is: replicasToPublish), each on its publisher's queue. The step is published once all serve it
 * with the trainer's one digest; while one cannot (its publisher absent, its vLLM
 * down after retries, a refused load), the run waits for the operator with every such replica named,
 * and `attune resume` publishes again to the replicas not yet done. Never trains on a partial fleet.
 * Null when the operator stopped the run instead.
 */
export async function publishToReplicas(
  settings: TrainingSettings,
  control: TrainingControl,
  step: number,
  ensure = false,
): Promise<ReplicasPublished | null> {
  const replicas = replicasToPublish(settings.publish.replicas ?? [], step, settings.publish.replicaUpdates, ensure);
  const done = new Map<string, ReplicaPublishResult>();
  for (;;) {
    const pending = replicas.filter((r) => !done.has(r.name));
    const results = await Promise.allSettled(
      pending.map((replica) =>
        publisherOf(settings, replica).publishToReplica({
          trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
          runName: settings.runName,
          step,
          replica: { name: replica.name, baseURL: replica.baseURL },
          ...(settings.publish.weights === 'full'
            ? {
                weights: 'full' as const,
                servedModel: settings.rollout.policy.model,
                ...(ensure ? { ensure } : {}),
                ...(settings.publish.replicaUpdates === 'inTurn' && !ensure ? { labelFirst: true as const } : {}),
              }
            : {}),
          ...unloadOf(settings),
        }),
      ),
    );
    const failures: string[] = [];
    results.forEach((result, i) => {
      const replica = pending[i]!;
      if (result.status === 'fulfilled') done.set(replica.name, result.value);
      else failures.push(replicaFailure(settings, replica, result.reason));
    });
    if (failures.length === 0) break;
    if (
      !(await control.resumedByOperator(`step ${step}: weights not published to every replica: ${failures.join('; ')}`))
    )
      return null;
    control.setPhase('publishing');
  }
  const published = [...done.values()];
  const digests = new Set(published.map((p) => p.digest));
  if (digests.size > 1)
    throw ApplicationFailure.nonRetryable(
      `step ${step}: the replicas loaded different adapters under one name: ${published.map((p) => `${p.replica} ${p.digest}`).join(', ')}`,
      'ReplicasDiverged',
    );
  const failedUnloads = published.flatMap((p) => p.unloadFailures.map((f) => `${p.replica}: ${f}`));
  if (failedUnloads.length > 0) control.report(`step ${step}: old adapters not unloaded: ${failedUnloads.join('; ')}`);
  const durations = published.map((p) => p.publishMs ?? null);
  return {
    version: `${settings.runName}@${step}`,
    publishMs: durations.some((t) => t === null) ? null : Math.max(...(durations as number[])),
  };
}

/** Recorded runs never checked their replicas before a step (replicas took LoRA adapters only). */
const REPLICAS_SERVE_PATCH = 'full-weights-replicas-checked-before-a-step';

/**
 * Before a full fine-tuning step samples `run@<step-1>` on replicas: each replica's publisher makes
 * its vLLM serve that version, reloading it from its own download only when vLLM serves another (it
 * restarted on its launch weights, or step 1's base version was never loaded). vLLM holds one set
 * of weights, so a replica that lost them cannot serve any call of the step. False when the operator
 * stopped the run instead; true at once for LoRA runs and single hosts.
 */
export async function replicasServeVersion(
  settings: TrainingSettings,
  control: TrainingControl,
  step: number,
): Promise<boolean> {
  if (settings.publish.weights !== 'full' || !settings.publish.replicas) return true;
  if (!patched(REPLICAS_SERVE_PATCH)) return true;
  return (await publishToReplicas(settings, control, step - 1, true)) !== null;
}

/** Runs recorded before this asked nothing of their replicas before overlapping steps (and hung there). */
const FIRST_VERSION_PATCH = 'overlapping-steps-replicas-serve-the-first-version';

/**
 * Before overlapping steps (`maxStaleness` >= 1: pipelined, or first finished) first sample a full
 * fine-tuning run's base version on replicas: each replica's publisher loads it unless its vLLM
 * serves it already. Later versions reach the replicas with each step's publish; this one was never
 * published, and a replica on its launch weights would keep every call waiting. While `state.step`
 * is 1 the dialogues sample step 0's version. False when the operator stopped the run instead.
 */
export async function replicasServeFirstVersion(
  settings: TrainingSettings,
  control: TrainingControl,
  stateStep: number,
): Promise<boolean> {
  if (settings.publish.weights !== 'full' || !settings.publish.replicas || stateStep !== 1) return true;
  if (!patched(FIRST_VERSION_PATCH)) return true;
  return (await publishToReplicas(settings, control, 0, true)) !== null;
}
