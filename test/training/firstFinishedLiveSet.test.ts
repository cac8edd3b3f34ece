import assert from 'node:assert/strict';
import { trainingWorkflowId, type TrainingStatus } from '../../src/workflows/training.js';
import type { LiveSettings } from '../../src/core/training/liveSet.js';
import { answered } from '../support/eventually.js';
import type { FakeBehaviour } from '../support/fakeOpenAI.js';
import { statusWhen } from '../support/statusWhen.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

const STEPS = 4;
const SET = [
  ...TINY_TRAINING('grpo', STEPS),
  'training.maxStaleness=1',
  'training.stepDialogues=firstFinished',
  'training.maxInFlight=8',
];
const BEHAVIOUR: FakeBehaviour = {
  latencyMs: 300,
  analysis: (ctx) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
};

describe('first-finished steps: attune set with dialogues in flight across steps (real dev server, real trainer)', function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('a lower maxInFlight holds from the next start on: the dialogues in flight drain to it and stay there, and the run trains every step', async () => {
    const run = 'ff-set-in-flight';
    rig = await createTrainingRig({ set: SET, behaviour: BEHAVIOUR });
    await rig.startWorkers();
    await rig.start(run);
    const handle = rig.client.workflow.getHandle(trainingWorkflowId(run));

    await statusWhen(rig, run, (s) => (s.stream?.inFlight ?? 0) > 2, 'more than two dialogues in flight');
    const live = await handle.executeUpdate<LiveSettings, [Record<string, unknown>]>('set', {
      args: [{ maxInFlight: 2 }],
    });
    assert.equal(live.maxInFlight, 2);
    await statusWhen(rig, run, (s) => (s.stream?.inFlight ?? 3) <= 2, 'the dialogues in flight to drain to 2');

    // From here on no status shows more than two in flight, through the continue-as-new of every step.
    const seen: number[] = [];
    for (;;) {
      const desc = await handle.describe();
      const status = await answered(() => handle.query<TrainingStatus>('trainingStatus'));
      seen.push(status.stream?.inFlight ?? 0);
      if (desc.status.name !== 'RUNNING') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(Math.max(...seen) <= 2, `in flight after the drain: ${seen.join(',')}`);
    assert.ok(seen.length > 5, `status sampled ${seen.length} times`);
    const result = await handle.result();
    assert.equal(result.stepsApplied, STEPS);
  });
});
