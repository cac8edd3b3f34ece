import assert from 'node:assert/strict';
import { learningRun, rewardRise } from '../support/learningRuns.js';

// Measured with these seeds (16 steps, npm run bench:learning -- --quick): GRPO 0.46 -> 0.70, PPO 0.51 -> 0.70
// (first three steps' mean reward -> last three's). A rise of 0.1 is well inside that, and far outside a run that does not learn.
const STEPS = 16;
const MIN_RISE = 0.1;

describe('learning through the whole pipeline: rollouts, trainer, published versions (tiny model, rule-based user)', function () {
  this.timeout(600_000);

  for (const algorithm of ['grpo', 'ppo'] as const) {
    it(`${algorithm}: the mean reward rises by at least ${MIN_RISE} over ${STEPS} steps`, async () => {
      const metrics = await learningRun(algorithm, STEPS, `learn-${algorithm}`);
      assert.equal(metrics.length, STEPS);
      const { first, last } = rewardRise(metrics);
      const curve = metrics.map((m) => m.reward.mean.toFixed(3)).join(' ');
      assert.ok(last >= first + MIN_RISE, `first three ${first.toFixed(3)}, last three ${last.toFixed(3)}: ${curve}`);
    });
  }

  it(`grpo with training.maxStaleness=1: the mean reward rises by at least ${MIN_RISE} over ${STEPS} steps`, async () => {
    const run = 'learn-grpo-stale1';
    const metrics = await learningRun('grpo', STEPS, run, { extra: ['training.maxStaleness=1'] });
    assert.equal(metrics.length, STEPS);
    // The rise alone would pass with the key ignored: the versions sampled show the overlap ran.
    for (const m of metrics.filter((m) => m.step >= 3))
      assert.equal(m.policyVersion, `${run}@${m.step - 2}`, `step ${m.step} samples the weights of two steps before`);
    const { first, last } = rewardRise(metrics);
    const curve = metrics.map((m) => m.reward.mean.toFixed(3)).join(' ');
    assert.ok(last >= first + MIN_RISE, `first three ${first.toFixed(3)}, last three ${last.toFixed(3)}: ${curve}`);
  });
});
