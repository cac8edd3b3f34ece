import assert from 'node:assert/strict';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { trainingStatusQuery, trainingWorkflowId, type TrainingStatus } from '../../src/workflows/training.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { statusWhen } from '../support/statusWhen.js';

describe('operating a training run: pause, resume, stop, set', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  // The same operations with the next step's rollouts overlapping the optimizer step.
  for (const maxStaleness of [0, 1]) {
    const staleness = `training.maxStaleness=${maxStaleness}`;
    const suffix = maxStaleness === 0 ? '' : `-s${maxStaleness}`;
    const label = maxStaleness === 0 ? '' : ` (maxStaleness ${maxStaleness})`;
    it(`pause lets in-flight rollouts finish and starts no new one until resume${label}`, async () => {
      rig = await createTrainingRig({ set: [...TINY_TRAINING('grpo', 2), 'training.maxInFlight=1', staleness] });
      await rig.startWorkers();
      const { handle } = await rig.start(`ops-pause${suffix}`);
      await rig.fake.waitForCall('analysis', 1);
      const paused = await handle.executeUpdate<TrainingStatus, []>('pause');
      assert.equal(paused.paused, true);
      const settled = await statusWhen(
        rig,
        `ops-pause${suffix}`,
        (s) => s.rollouts.inFlight === 0,
        'in-flight rollouts to finish',
      );
      assert.equal(settled.rollouts.done, 1, 'the dialogue in flight finished');
      assert.equal(settled.step, 1);
      // With maxInFlight 1, every started dialogue has made its first analysis call: exactly one started.
      const analysesWhilePaused = rig.fake.count('analysis');
      assert.equal(analysesWhilePaused, 2, 'one dialogue of 2 turns, nothing new');
      await handle.executeUpdate('resume');
      const result = await handle.result();
      assert.equal(result.stepsApplied, 2);
      assert.equal(rig.fake.count('analysis'), 2 * 4 * 2, '2 steps x 4 dialogues x 2 turns, none lost or repeated');
    });

    it(`stop ends the run gracefully after the current step${label}`, async () => {
      rig = await createTrainingRig({ set: [...TINY_TRAINING('grpo', 3), staleness] });
      await rig.startWorkers();
      const { handle } = await rig.start(`ops-stop${suffix}`);
      await rig.fake.waitForCall('analysis', 1);
      const status = await handle.executeUpdate<TrainingStatus, []>('stop');
      assert.equal(status.stopRequested, true);
      const result = await handle.result();
      assert.equal(result.stopped, true);
      assert.equal(result.stepsApplied, 1, 'step 1 completed, no step 2');
      assert.equal((await rig.trainer.runState(`ops-stop${suffix}`)).step, 1);
      assert.deepEqual(
        (await rig.metrics(`ops-stop${suffix}`)).map((m) => m.step),
        [1],
      );
    });

    it(`set changes hyperparameters of a live run and rejects bad values with the reason${label}`, async () => {
      rig = await createTrainingRig({ set: [...TINY_TRAINING('grpo', 2), 'training.maxInFlight=1', staleness] });
      await rig.startWorkers();
      const { handle } = await rig.start(`ops-set${suffix}`);
      await rig.fake.waitForCall('analysis', 1);
      const live = await handle.executeUpdate('set', { args: [{ learning_rate: 0.002, steps: 3 }] });
      assert.deepEqual(live, { learning_rate: 0.002, steps: 3 });
      await assert.rejects(handle.executeUpdate('set', { args: [{ learning_rate: -1 }] }), (error: unknown) => {
        assert.ok(error instanceof WorkflowUpdateFailedError);
        assert.match(String(error.cause?.message), /learning_rate: /);
        return true;
      });
      await assert.rejects(handle.executeUpdate('set', { args: [{ base_model: 'other' }] }), (error: unknown) => {
        assert.ok(error instanceof WorkflowUpdateFailedError);
        assert.match(String(error.cause?.message), /base_model: cannot be changed on a live run/);
        return true;
      });
      await assert.rejects(handle.executeUpdate('set', { args: [{ value_learning_rate: 1e-5 }] }), (error: unknown) => {
        assert.ok(error instanceof WorkflowUpdateFailedError);
        assert.equal(error.cause?.message, 'value_learning_rate: tunes the critic, and grpo trains none');
        return true;
      });
      await assert.rejects(handle.executeUpdate('set', { args: [{ steps: 0 }] }), WorkflowUpdateFailedError);
      const result = await handle.result();
      assert.equal(result.stepsApplied, 3, 'steps raised from 2 to 3 on the live run');
      const status = await rig.client.workflow
        .getHandle(trainingWorkflowId(`ops-set${suffix}`))
        .query(trainingStatusQuery);
      assert.equal(status.live.learning_rate, 0.002);
    });
  }
});
