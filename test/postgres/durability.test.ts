import assert from 'node:assert/strict';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { restartClusterService, type ClusterService } from '../support/temporalCluster.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

// A short heartbeat timeout, so an activity whose completion a dead service lost is retried soon.
const SET = [...TINY_TRAINING('grpo'), 'training.trainer.heartbeatTimeoutMs=3000'];
// Simulator answers depend only on the request, so every run of the same seed sees the same dialogues.
const BEHAVIOUR = { analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }) };

describe('training durability on the Temporal cluster on PostgreSQL (services SIGKILLed and restarted)', function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('completes with each step applied once when history, then the frontend, are SIGKILLed mid-step', async () => {
    rig = await createTrainingRig({ set: SET, behaviour: BEHAVIOUR });
    await rig.startWorkers();
    const run = `pg-durability-${Date.now()}`;
    await rig.start(run);
    // Each step makes 8 analysis calls: the 11th is in step 2, the 19th in step 3.
    const crashes: [number, ClusterService][] = [
      [11, 'history'],
      [19, 'frontend'],
    ];
    for (const [call, service] of crashes) {
      await rig.fake.waitForCall('analysis', call);
      await restartClusterService(service);
    }
    const result = await rig.client.workflow.getHandle(trainingWorkflowId(run)).result();
    assert.equal(result.stepsApplied, 3);
    assert.equal((await rig.trainer.runState(run)).step, 3, 'the trainer applied exactly 3 steps');
    assert.deepEqual(
      (await rig.metrics(run)).map((m) => m.step),
      [1, 2, 3],
      'one metrics line per step',
    );
  });
});
