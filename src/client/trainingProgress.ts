import { trainingStatusQuery, type TrainingResult, type TrainingStatus } from '../workflows/training.js';
import type { TrainingHandle } from './trainingRuns.js';
import { followWorkflow, type FollowedWorkflow } from './workflowFollowing.js';

/** A run's statuses until it ends, and its result: it follows continue-as-new to the final execution. */
export type FollowedTraining = FollowedWorkflow<TrainingStatus, TrainingResult>;

/** Follows a run until it ends; what to show of each status is the caller's choice. */
export function followTraining(handle: TrainingHandle, pollMs: number): FollowedTraining {
  return followWorkflow(handle.result(), () => handle.query(trainingStatusQuery), pollMs);
}
