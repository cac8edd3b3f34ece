import assert from 'node:assert/strict';
import type { Transcript } from '../../src/core/transcript.js';
import { stepDifficulties } from '../../src/core/training/difficultyMix.js';
import { simulatorPromptHash } from '../../src/core/prompts/simulatorPromptHash.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

const HARD_NOTE = 'you are hard to reach';
const SIMPLE_NOTE = 'almost any kind or positive reply';

describe('training with a mix of simulator difficulties (real dev server, tiny trainer)', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  after(async () => {
    await rig?.close();
  });

  it("each dialogue's level reaches its simulator calls and its transcript; each step records its mix", async () => {
    // Step 1 all hard; step 2 half simple, half hard (GRPO: both samples of a scenario share its level).
    const mix = [
      { fromStep: 1, hard: 1 },
      { fromStep: 2, simple: 0.5, hard: 0.5 },
    ];
    rig = await createTrainingRig({
      set: [...TINY_TRAINING('grpo', 2), `training.difficultyMix=${JSON.stringify(mix)}`],
      behaviour: { analysis: (ctx) => ({ emotionChange: (ctx.last.length % 7) - 3 }) },
    });
    await rig.startWorkers();
    const run = 'difficulty-mix';
    const { handle } = await rig.start(run);
    assert.equal((await handle.result()).stepsApplied, 2);

    const transcripts = await Promise.all(
      (await rig.store.list(`rollouts/${run}`)).map((key) => rig!.store.getJson<Transcript>(key)),
    );
    assert.equal(transcripts.length, 8);
    for (const step of [1, 2]) {
      const planned = stepDifficulties(mix, 7, step, 2);
      for (const t of transcripts.filter((t) => t.step === step)) {
        const position = Number(new RegExp(`--s${step}--(\\d)-`).exec(t.rolloutId)![1]);
        assert.equal(t.difficulty, planned[position], t.rolloutId);
      }
    }
    assert.deepEqual([...new Set(transcripts.filter((t) => t.step === 1).map((t) => t.difficulty))], ['hard']);
    // The analysis calls carried each dialogue's level: hard ones the hard words, simple ones the simple words.
    const analyses = rig.fake.calls.filter((c) => c.role === 'analysis').map((c) => c.messages[0]!.content);
    // (Seed 7 gives step 2 one scenario at each level, so both kinds of calls are made.)
    assert.deepEqual(stepDifficulties(mix, 7, 2, 2).sort(), ['hard', 'simple']);
    const simpleDialogues = transcripts.filter((t) => t.difficulty === 'simple');
    const simpleAnalyses = simpleDialogues.reduce((n, t) => n + t.turns.filter((turn) => turn.analysis).length, 0);
    assert.equal(analyses.filter((text) => text.includes(SIMPLE_NOTE)).length, simpleAnalyses);
    assert.equal(analyses.filter((text) => text.includes(HARD_NOTE)).length, analyses.length - simpleAnalyses);
    assert.ok(simpleAnalyses > 0);

    // The run's record: step 1 at hard, step 2 its mix, each with the hash of the prompts it played.
    const [first, second] = await rig.metrics(run);
    assert.equal(first?.environment?.simulator.difficulty, 'hard');
    assert.equal(first?.environment?.promptHash, simulatorPromptHash(['hard']));
    assert.deepEqual(second?.environment?.simulator.difficultyMix, { simple: 0.5, hard: 0.5 });
    assert.equal(second?.environment?.promptHash, simulatorPromptHash(['simple', 'hard']));
  });
});
