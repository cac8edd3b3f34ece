import { Worker } from '@temporalio/worker';
import { QUEUE_ACTIVITIES } from '../activities/queueActivities.js';
import { LIMITS } from '../config/limits.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import { commonWorkerOptions, type LlmIoWorkerOptions } from './llmIoWorkers.js';

/**
 * The GPU side: optimizer activities, one at a time (a GPU host trains one step at a time). A long
 * grace time lets a stopping worker finish a step rather than abandon it.
 */
export async function createOptimizerWorker(options: Omit<LlmIoWorkerOptions, 'workflowBundle'>): Promise<Worker> {
  const queues = taskQueuesFor(options.config.temporal.taskQueuePrefix);
  return Worker.create({
    ...commonWorkerOptions(options, LIMITS.optimizerShutdownGraceTimeMs),
    taskQueue: queues.optimizer,
    activities: QUEUE_ACTIVITIES.optimizer(options),
    maxConcurrentActivityTaskExecutions: 1,
  });
}
