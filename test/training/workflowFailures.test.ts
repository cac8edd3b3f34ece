import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { loadConfig } from '../../src/config/load.js';
import { training, trainingStatusQuery, trainingWorkflowId } from '../../src/workflows/training.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

describe('training: failures end in a typed error or a wait for the operator, never a wedged workflow', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('the CLI rejects an empty train split before starting anything', () => {
    const empty = mkdtempSync(join(tmpdir(), 'attune-empty-split-'));
    const config = loadConfig({ env: {}, set: [...TINY_TRAINING('grpo'), `scenarios.train=${empty}`] });
    assert.throws(() => trainingSettingsFromConfig(config, 'empty-split'), /scenarios\.train: no scenarios in/);
  });

  it('a run whose train split is empty when a step starts fails with EmptyScenarioSplit', async () => {
    rig = await createTrainingRig({ set: TINY_TRAINING('grpo', 1) });
    await rig.startWorkers();
    // The split was checked on the client; it is emptied before the workflow reads it.
    const settings = {
      ...trainingSettingsFromConfig(rig.config, 'emptied-split'),
      scenarioDir: mkdtempSync(join(tmpdir(), 'attune-emptied-split-')),
    };
    const handle = await rig.client.workflow.start(training, {
      taskQueue: taskQueuesFor(rig.config.temporal.taskQueuePrefix).rollouts,
      workflowId: trainingWorkflowId('emptied-split'),
      args: [{ settings }],
    });
    const error = await handle.result().then(
      () => assert.fail('the run should fail'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof WorkflowFailedError, String(error));
    assert.ok(error.cause instanceof ApplicationFailure, String(error.cause));
    assert.equal(error.cause.type, 'EmptyScenarioSplit');
  });

  it('a step in which no rollout survives waits for the operator; resume retries them and the run completes', async () => {
    let endpointDown = true;
    rig = await createTrainingRig({
      behaviour: { fault: () => (endpointDown ? '500' : undefined) },
      // Dialogues fail (rather than wait at the failed call) once their retries run out.
      set: [
        ...TINY_TRAINING('grpo', 1),
        'training.maxFailedShare=1',
        'policy.retry.maximumAttempts=1',
        'rollout.maxWaitMinutes=0',
      ],
    });
    await rig.startWorkers();
    const { handle } = await rig.start('no-survivors');
    const query = rig.client.workflow.getHandle(trainingWorkflowId('no-survivors'));
    const deadline = Date.now() + 120_000;
    let status = await query.query(trainingStatusQuery);
    while (status.phase !== 'waiting-for-operator') {
      if (Date.now() > deadline) throw new Error(`never waited for the operator: ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 100));
      status = await query.query(trainingStatusQuery);
    }
    assert.match(status.blockedReason ?? '', /no rollout survived to train on \(4 failed; first error: .*HTTP 500/);
    endpointDown = false;
    await handle.executeUpdate('resume');
    const result = await handle.result();
    assert.equal(result.stepsApplied, 1);
  });
});
