import assert from 'node:assert/strict';
import { RunEndedError } from '../../src/client/trainingRuns.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

/** The trainer's applied step for a run (GET /v1/runs/NAME). */
async function trainerStep(rig: TrainingRig, runName: string): Promise<number> {
  const response = await fetch(`${rig.trainer.url}/v1/runs/${runName}`);
  return ((await response.json()) as { step: number }).step;
}

/** How many rollout workflows a step of a run started (attempts included). */
async function rolloutsOfStep(rig: TrainingRig, runName: string, step: number): Promise<number> {
  let count = 0;
  for await (const _ of rig.client.workflow.list({
    query: `WorkflowType = 'rollout' AND AttuneRunName = '${runName}' AND AttuneStep = ${step}`,
  }))
    count++;
  return count;
}

describe('training: a run name is never trained from step 1 again', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('starting a completed run again shows its result and runs nothing; a larger training.steps continues it only when asked', async () => {
    rig = await createTrainingRig({ set: TINY_TRAINING('grpo', 1) });
    await rig.startWorkers();
    const first = await rig.start('rerun-done');
    assert.equal(first.outcome, 'started');
    assert.equal((await first.handle.result()).stepsApplied, 1);
    const calls = rig.fake.calls.length;

    const again = await rig.start('rerun-done');
    assert.equal(again.outcome, 'finished');
    assert.equal(again.outcome === 'finished' && again.result.stepsApplied, 1);
    assert.equal(rig.fake.calls.length, calls, 'no dialogue was played again');
    assert.equal(await trainerStep(rig, 'rerun-done'), 1);

    const more = { ...rig.config, training: { ...rig.config.training, steps: 2 } };
    const notAsked = await rig.start('rerun-done', more);
    assert.equal(notAsked.outcome, 'finished');
    assert.match((notAsked.outcome === 'finished' && notAsked.note) || '', /add --continue to train on to step 2/);

    const continued = await rig.start('rerun-done', more, { continueRun: true });
    assert.equal(continued.outcome, 'continued');
    assert.equal(continued.outcome === 'continued' && continued.fromStep, 2);
    assert.equal((await continued.handle.result()).stepsApplied, 2);
    assert.equal(await trainerStep(rig, 'rerun-done'), 2);
    assert.deepEqual(
      (await rig.metrics('rerun-done')).map((m) => m.step),
      [1, 2],
    );
    assert.equal(await rolloutsOfStep(rig, 'rerun-done', 1), 4, 'step 1 was rolled out once');
  });

  it("a terminated run is refused without --continue, and continues from the trainer's applied step + 1 with it", async () => {
    rig = await createTrainingRig({ behaviour: { latencyMs: 200 }, set: TINY_TRAINING('grpo', 2) });
    await rig.startWorkers();
    const { handle } = await rig.start('rerun-killed');
    // Terminate once step 1 is recorded and step 2 has begun.
    const deadline = Date.now() + 120_000;
    while ((await rig.metrics('rerun-killed')).length < 1) {
      if (Date.now() > deadline) throw new Error('step 1 never finished');
      await new Promise((r) => setTimeout(r, 100));
    }
    await handle.terminate('test: the run dies between steps');

    await assert.rejects(rig.start('rerun-killed'), (error: unknown) => {
      assert.ok(error instanceof RunEndedError);
      assert.match(error.message, /ended \(terminated\) after the trainer applied 1 step\(s\); add --continue/);
      return true;
    });

    const continued = await rig.start('rerun-killed', rig.config, { continueRun: true });
    assert.equal(continued.outcome === 'continued' && continued.fromStep, 2);
    const result = await continued.handle.result();
    assert.equal(result.stepsApplied, 2);
    assert.equal(await trainerStep(rig, 'rerun-killed'), 2);
    assert.deepEqual(
      (await rig.metrics('rerun-killed')).map((m) => m.step),
      [1, 2],
    );
    assert.equal(await rolloutsOfStep(rig, 'rerun-killed', 1), 4, 'step 1 was rolled out once');
  });
});
