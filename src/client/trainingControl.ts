import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { LiveSettings } from '../core/training/liveSet.js';
import {
  pauseUpdate,
  resumeUpdate,
  setUpdate,
  stopUpdate,
  trainingStatusQuery,
  type TrainingStatus,
} from '../workflows/training.js';
import { trainingHandle } from './trainingRuns.js';

export type TrainingAction = 'pause' | 'resume' | 'stop';

const ACTION_UPDATES = { pause: pauseUpdate, resume: resumeUpdate, stop: stopUpdate } as const;

/** Activities whose retries status shows: the workflow only learns of their failure once retries end. */
const RETRIED_ACTIVITIES: Record<string, string> = {
  applyOptimizerStep: 'optimizer step retrying',
  publishPolicyVersion: 'publishing retrying',
};

/**
 * The run's status; while the optimizer step or the publishing is being retried, its last error is
 * the blocked reason (the workflow only learns of it once the attempts run out).
 */
export async function trainingStatus(client: Client, runName: string): Promise<TrainingStatus> {
  const handle = trainingHandle(client, runName);
  const status = await handle.query(trainingStatusQuery);
  if (status.blockedReason) return status;
  const retrying = (await handle.describe()).raw.pendingActivities?.find(
    (a) => Object.hasOwn(RETRIED_ACTIVITIES, a.activityType?.name ?? '') && a.lastFailure?.message,
  );
  if (!retrying) return status;
  const what = RETRIED_ACTIVITIES[retrying.activityType?.name ?? ''] ?? 'retrying';
  return {
    ...status,
    blockedReason: `${what} (attempt ${retrying.attempt ?? '?'}): ${retrying.lastFailure?.message ?? ''}`,
  };
}

/** Pauses, resumes or stops a live run; returns its status once the run has taken the request. */
export function controlTraining(client: Client, runName: string, action: TrainingAction): Promise<TrainingStatus> {
  return trainingHandle(client, runName).executeUpdate(ACTION_UPDATES[action]);
}

/** The run validates a change before it applies it: a rejected change comes back with the reason. */
export async function changeLiveSettings(
  client: Client,
  runName: string,
  change: Record<string, unknown>,
): Promise<{ applied: LiveSettings } | { rejected: string }> {
  try {
    return { applied: await trainingHandle(client, runName).executeUpdate(setUpdate, { args: [change] }) };
  } catch (error) {
    if (error instanceof WorkflowUpdateFailedError) return { rejected: error.cause?.message ?? error.message };
    throw error;
  }
}
