import { trainingStatusQuery, type TrainingResult, type TrainingStatus } from '../workflows/training.js';
import type { FrontendLink } from './frontendLink.js';
import { trainingHandle } from './trainingRuns.js';
import { followWorkflow, type FollowedWorkflow } from './workflowFollowing.js';

/** A run's statuses until it ends, and its result: it follows continue-as-new to the final execution. */
export type FollowedTraining = FollowedWorkflow<TrainingStatus, TrainingResult>;

/**
 * Follows the run of that name until it ends, on the link's client (through a lost frontend, when the
 * link reconnects); what to show of each status is the caller's choice.
 */
export function followTraining(link: FrontendLink, runName: string, pollMs: number): FollowedTraining {
  return followWorkflow(
    link,
    {
      result: (client) => trainingHandle(client, runName).result(),
      query: (client) => trainingHandle(client, runName).query(trainingStatusQuery),
    },
    pollMs,
  );
}
