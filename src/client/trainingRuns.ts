import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { AttuneConfig } from '../config/schema.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import { trainingSettingsFromConfig } from '../config/trainingSettingsFromConfig.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { training, trainingWorkflowId } from '../workflows/training.js';

export type TrainingHandle = WorkflowHandle<typeof training>;

/** The run of that name, whichever execution of its continue-as-new chain is current. */
export function trainingHandle(client: Client, runName: string): TrainingHandle {
  return client.workflow.getHandle<typeof training>(trainingWorkflowId(runName));
}

/** Starts the run, or attaches to the running one of that name. */
export async function startOrAttachTraining(
  client: Client,
  config: AttuneConfig,
  runName: string,
): Promise<{ handle: TrainingHandle; attached: boolean }> {
  const settings = trainingSettingsFromConfig(config, runName);
  try {
    const handle = await client.workflow.start(training, {
      taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
      workflowId: trainingWorkflowId(runName),
      args: [{ settings }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.kind, value: 'training' },
        { key: SEARCH_ATTRIBUTES.runName, value: runName },
      ],
    });
    return { handle, attached: false };
  } catch (error) {
    // A finished run of that name: attach to it (its result), never start a second one.
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      return { handle: trainingHandle(client, runName), attached: true };
    throw error;
  }
}
