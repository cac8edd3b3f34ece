import assert from 'node:assert/strict';
import type { UnpolledQueue } from '../../src/temporal/pollers.js';
import { trainingStatusQuery, type TrainingStatus } from '../../src/workflows/training.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { attune } from './attuneProcess.js';

describe('attune status names what a run waits on', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  after(async () => {
    await rig?.close();
  });

  it('a run whose optimizer queue has no worker says so, with what to start; once one polls, it finishes', async () => {
    rig = await createTrainingRig({ set: TINY_TRAINING('grpo', 1) });
    await rig.startWorkers({ llm: true, optimizer: false });
    const { handle } = await rig.start('unserved');
    // Its first act, creating the trainer's run, is an optimizer activity: the run cannot start.
    assert.equal((await handle.query(trainingStatusQuery)).phase, 'starting');
    const set = rig.configSet.flatMap((s) => ['--set', s]);
    const env = { TEMPORAL_ADDRESS: rig.address };

    const json = await attune(['status', 'unserved', '--json', ...set], env);
    assert.equal(json.code, 0, json.stderr);
    const status = JSON.parse(json.stdout) as TrainingStatus & { waitingOn: UnpolledQueue[] };
    assert.equal(status.phase, 'starting');
    assert.deepEqual(
      status.waitingOn.map((q) => [q.queue.endsWith('attune-optimizer'), q.serves]),
      [[true, 'optimizer steps']],
    );
    const table = await attune(['status', 'unserved', ...set], env);
    assert.match(
      table.stdout,
      /^no worker polls +\S*attune-optimizer \(optimizer steps\): start `attune dev`, or `attune worker --role optimizer`/m,
    );

    await rig.startWorkers({ optimizer: true });
    assert.equal((await handle.result()).stepsApplied, 1);
  });
});
