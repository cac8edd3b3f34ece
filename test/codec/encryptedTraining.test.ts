import assert from 'node:assert/strict';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { fixtureScenario } from '../support/rolloutRig.js';
import { converterWith } from './keyFiles.js';
import { dialogueMarkers, historyWithoutCodec, plaintextFound } from './plainHistory.js';

describe('a training run with encrypted payloads (real dev server, real trainer)', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('trains a step; neither the run nor its dialogues show a hidden intention, prompt or reply', async () => {
    rig = await createTrainingRig({ set: TINY_TRAINING('grpo', 1), dataConverter: converterWith(['k1']) });
    await rig.startWorkers();
    const run = `codec-train-${Date.now()}`;
    const { handle } = await rig.start(run);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 1);
    assert.equal((await rig.trainer.runState(run)).step, 1);

    const rollouts: string[] = [];
    for await (const w of rig.client.workflow.list({ query: `WorkflowType = 'rollout' AND AttuneRunName = '${run}'` }))
      rollouts.push(w.workflowId);
    assert.equal(rollouts.length, 4, 'two scenarios x two samples');
    for (const id of [trainingWorkflowId(run), ...rollouts]) {
      const raw = await historyWithoutCodec(rig.address, id);
      for (const scenario of ['test-venting-negative-baker', 'test-not-my-fault-avoidant-cyclist']) {
        assert.deepEqual(plaintextFound(raw, dialogueMarkers(fixtureScenario(scenario))), [], id);
      }
    }
  });
});
