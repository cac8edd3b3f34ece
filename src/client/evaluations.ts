import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { AttuneConfig } from '../config/schema.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import type { EvaluationInput } from '../core/evaluationInput.js';
import { evaluation } from '../workflows/evaluation.js';

// Built from the config alone, so the training settings can build one too without the client.
export {
  buildEvaluationInput,
  policyBaseUrlForVersions,
  type EvaluationRequest,
} from '../config/evaluationInputFromConfig.js';

export async function startEvaluation(client: Client, config: AttuneConfig, input: EvaluationInput) {
  return client.workflow.start(evaluation, {
    taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
    workflowId: input.evalId,
    args: [input],
    // A finished evaluation of this id is attached to (its report), never run again.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.kind, value: 'evaluation' },
      ...(input.runName ? [{ key: SEARCH_ATTRIBUTES.runName, value: input.runName }] : []),
    ],
  });
}

/** Starts the evaluation, or attaches to the one with that id: an evaluation id is never run twice. */
export async function startOrAttachEvaluation(
  client: Client,
  config: AttuneConfig,
  input: EvaluationInput,
): Promise<{ handle: WorkflowHandle<typeof evaluation>; attached: boolean }> {
  try {
    return { handle: await startEvaluation(client, config, input), attached: false };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      return { handle: client.workflow.getHandle<typeof evaluation>(input.evalId), attached: true };
    throw error;
  }
}
