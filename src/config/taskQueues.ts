/**
 * One task queue per domain, so each can be scaled and rate-limited on its own:
 * rollouts (workflow tasks and artifact writes), the policy endpoint, the simulator endpoint,
 * whole dialogue turns (`rollout.activityPer: turn`, both endpoints), and the GPU optimizer.
 * Names live here only; timeouts and concurrency limits are in `limits.ts`.
 */
export const TASK_QUEUES = {
  rollouts: 'attune-rollouts',
  policy: 'attune-llm-policy',
  simulator: 'attune-llm-simulator',
  turns: 'attune-llm-turns',
  optimizer: 'attune-optimizer',
} as const;

export type TaskQueues = { [K in keyof typeof TASK_QUEUES]: string };

/** Queue names with an optional prefix, so several deployments (or test cases) can share a namespace. */
export function taskQueuesFor(prefix: string): TaskQueues {
  return {
    rollouts: `${prefix}${TASK_QUEUES.rollouts}`,
    policy: `${prefix}${TASK_QUEUES.policy}`,
    simulator: `${prefix}${TASK_QUEUES.simulator}`,
    turns: `${prefix}${TASK_QUEUES.turns}`,
    optimizer: `${prefix}${TASK_QUEUES.optimizer}`,
  };
}

/** Stem of the publish queues: one per vLLM replica, served by the publisher worker beside it. */
export const PUBLISH_QUEUE_STEM = 'attune-publish';

/** The publish queue of replica `name` (`policy.replicas[].name`), with the deployment's prefix. */
export function publishQueueFor(prefix: string, replicaName: string): string {
  return `${prefix}${PUBLISH_QUEUE_STEM}-${replicaName}`;
}
