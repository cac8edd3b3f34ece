import assert from 'node:assert/strict';
import type { Transcript } from '../../src/core/transcript.js';
import { scenariosForStep } from '../../src/core/training/scenarioSchedule.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

describe('training workflow (real dev server, real trainer with the tiny model)', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  for (const algorithm of ['grpo', 'ppo'] as const) {
    it(`${algorithm}: 3 steps end to end, each step applied once with exactly its samples`, async () => {
      rig = await createTrainingRig({
        set: TINY_TRAINING(algorithm),
        behaviour: { analysis: (ctx) => ({ emotionChange: (ctx.last.length % 7) - 3 }) },
      });
      await rig.startWorkers();
      const run = `${algorithm}-e2e`;
      const { handle } = await rig.start(run);
      const result = await handle.result();
      assert.equal(result.stepsApplied, 3);
      assert.equal(result.version, `${run}@3`);
      const state = await rig.trainer.runState(run);
      assert.equal(state.step, 3, 'the trainer applied exactly 3 steps');

      const metrics = await rig.metrics(run);
      assert.deepEqual(
        metrics.map((m) => m.step),
        [1, 2, 3],
        'one metrics line per step',
      );
      const perStep = algorithm === 'grpo' ? 4 : 2;
      for (const m of metrics) {
        assert.equal(m.rollouts.ok, perStep);
        assert.equal(m.rollouts.failed, 0);
        assert.ok(Number.isFinite(m.trainer.loss));
        assert.ok(m.trainer.tokens > 0);
        assert.equal(m.policyVersion, `${run}@${m.step - 1}`, "each step samples from the previous step's weights");
      }
      // Every step saw exactly its planned dialogues: scenarios from (seed, step), samples per scenario, no duplicates.
      const transcripts = await rig.store.list(`rollouts/${run}`);
      assert.equal(transcripts.length, 3 * perStep);
      const ids = ['test-not-my-fault-avoidant-cyclist', 'test-venting-negative-baker'];
      for (let step = 1; step <= 3; step++) {
        const expected = scenariosForStep(ids, 7, step, 2).ids.sort();
        const seen = [] as string[];
        for (const key of transcripts) {
          const t = await rig.store.getJson<Transcript>(key);
          if (t.step === step) seen.push(t.scenario.id);
        }
        const unique = [...new Set(seen)].sort();
        assert.deepEqual(unique, expected);
        assert.equal(seen.length, perStep);
      }
    });
  }
});
