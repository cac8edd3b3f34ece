import type { Client } from '@temporalio/client';
import type { AttuneConfig } from '../config/schema.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import { rolloutStartOptions } from '../core/rolloutStart.js';
import type { Scenario } from '../core/scenario.js';
import type { RolloutSummary } from '../core/transcript.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { rollout, type RolloutInput } from '../workflows/rollout.js';

/** Runs one dialogue as its own workflow (id `input.rolloutId`) and waits for its summary. */
export function runRollout(
  client: Client,
  config: AttuneConfig,
  input: RolloutInput & { scenario: Scenario },
): Promise<RolloutSummary> {
  return client.workflow.execute(rollout, {
    ...rolloutStartOptions(input.settings),
    taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
    workflowId: input.rolloutId,
    args: [input],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.kind, value: 'rollout' },
      { key: SEARCH_ATTRIBUTES.scenarioId, value: input.scenario.id },
    ],
  });
}
