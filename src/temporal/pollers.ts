import type { AttuneConfig } from '../config/schema.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import type { TemporalHandle } from './connect.js';

/**
 * The server lists a worker's pollers for minutes after it exits; a live worker re-polls at least
 * once a minute (long polls), so only pollers seen within this window count.
 */
const LIVE_POLLER_WINDOW_MS = 70_000;

const WORKFLOW_QUEUE = 1;
const ACTIVITY_QUEUE = 2;

async function livePollers(handle: TemporalHandle, name: string, taskQueueType: 1 | 2): Promise<number> {
  const response = await handle.client.workflowService.describeTaskQueue({
    namespace: handle.namespace,
    taskQueue: { name, kind: 1 },
    taskQueueType,
  });
  const now = Date.now();
  return (response.pollers ?? []).filter((p) => {
    const seconds = Number(p.lastAccessTime?.seconds ?? 0);
    return seconds === 0 || now - seconds * 1000 < LIVE_POLLER_WINDOW_MS;
  }).length;
}

/** A task queue a run needs that no live worker polls, with what serves it and how to start that. */
export interface UnpolledQueue {
  queue: string;
  /** Workflow tasks (without a poller the run can neither move nor answer queries) or activities. */
  kind: 'workflow' | 'activity';
  serves: string;
  start: string;
}

interface NeededQueue extends Omit<UnpolledQueue, 'kind'> {
  type: 1 | 2;
}

function rolloutQueues(config: AttuneConfig): NeededQueue[] {
  const queues = taskQueuesFor(config.temporal.taskQueuePrefix);
  const llm = '`attune dev`, or `attune worker --role llm`';
  return [
    { queue: queues.rollouts, type: WORKFLOW_QUEUE, serves: 'training, rollout and evaluation workflows', start: llm },
    { queue: queues.policy, type: ACTIVITY_QUEUE, serves: 'policy LLM calls', start: llm },
    { queue: queues.simulator, type: ACTIVITY_QUEUE, serves: 'simulator LLM calls', start: llm },
    ...(config.rollout.activityPer === 'turn'
      ? [{ queue: queues.turns, type: ACTIVITY_QUEUE, serves: 'dialogue turns', start: llm } as const]
      : []),
  ];
}

function optimizerQueue(config: AttuneConfig): NeededQueue {
  return {
    queue: taskQueuesFor(config.temporal.taskQueuePrefix).optimizer,
    type: ACTIVITY_QUEUE,
    serves: 'optimizer steps',
    start: '`attune dev`, or `attune worker --role optimizer` beside the trainer',
  };
}

async function unpolled(handle: TemporalHandle, needed: NeededQueue[]): Promise<UnpolledQueue[]> {
  const counts = await Promise.all(needed.map((q) => livePollers(handle, q.queue, q.type)));
  return needed
    .filter((_, i) => counts[i] === 0)
    .map(({ queue, type, serves, start }) => ({
      queue,
      kind: type === WORKFLOW_QUEUE ? 'workflow' : 'activity',
      serves,
      start,
    }));
}

/** The queues a training run needs (rollouts, LLM calls, optimizer) that no live worker polls. */
export async function unpolledTrainingQueues(handle: TemporalHandle, config: AttuneConfig): Promise<UnpolledQueue[]> {
  return unpolled(handle, [...rolloutQueues(config), optimizerQueue(config)]);
}

/** Whether some worker polls the rollout queues, i.e. `attune dev` or `attune worker` is running. */
export async function rolloutWorkersPolling(handle: TemporalHandle, config: AttuneConfig): Promise<boolean> {
  return (await unpolled(handle, rolloutQueues(config))).length === 0;
}

/** Whether an optimizer worker polls (`attune worker --role optimizer` on a GPU host). */
export async function optimizerWorkerPolling(handle: TemporalHandle, config: AttuneConfig): Promise<boolean> {
  return (await unpolled(handle, [optimizerQueue(config)])).length === 0;
}
