import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import { rolloutProgressQuery, type rollout, type RolloutInput } from '../../src/workflows/rollout.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { createRolloutRig, FIXTURE_SCENARIOS, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { RunningWorkers } from '../support/runningWorkers.js';
import { sharedWorkflowBundle } from '../support/temporalEnv.js';

describe('rollout progress query (real dev server)', function () {
  this.timeout(120_000);
  let rig: RolloutRig | undefined;
  const running = new RunningWorkers();
  afterEach(async () => {
    await running.stop();
    await rig?.close();
    rig = undefined;
  });

  it('answers from the first workflow task, while the scenario is still loading', async () => {
    // Queued artifact activities: a local scenario load would hold the workflow task, and the query with it.
    rig = await createRolloutRig({ set: [...ROLLOUT_MODES.perCall] });
    const queues = taskQueuesFor(rig.config.temporal.taskQueuePrefix);
    // Only the rollout's workflow worker runs: no worker takes the scenario's load, so the rollout
    // stays at it, and the query must be answered there.
    running.start([
      await Worker.create({
        connection: rig.env.nativeConnection,
        namespace: rig.env.namespace ?? 'default',
        taskQueue: queues.rollouts,
        workflowBundle: await sharedWorkflowBundle(),
      }),
    ]);
    const scenario = fixtureScenario('test-venting-negative-baker');
    const input: RolloutInput = {
      rolloutId: `rollout-progress-${Date.now()}`,
      scenarioRef: { dir: FIXTURE_SCENARIOS, id: scenario.id },
      settings: rig.settings(),
      seed: 1,
    };
    const handle = await rig.client.workflow.start<typeof rollout>('rollout', {
      taskQueue: queues.rollouts,
      workflowId: input.rolloutId,
      args: [input],
    });
    try {
      const progress = await handle.query(rolloutProgressQuery);
      assert.deepEqual(progress, {
        turn: 0,
        emotion: input.settings.initialEmotion,
        emotions: [],
        outcome: null,
        phase: 'scenario',
      });
    } finally {
      await handle.terminate('test over');
    }
  });
});
