import assert from 'node:assert/strict';
import {
  applyLiveSet,
  checkLiveSet,
  liveHyperparameters,
  settingsInForce,
} from '../../src/core/training/liveOverrides.js';

const SETTINGS = { steps: 5, maxInFlight: 8, maxFailedShare: 0.25, evalEvery: 2 };

describe('live overrides of a running training run', () => {
  it("the operator's values win over the run's, the rest stay", () => {
    assert.deepEqual(settingsInForce(SETTINGS, {}), SETTINGS);
    assert.deepEqual(settingsInForce(SETTINGS, { steps: 7, evalEvery: 0, learning_rate: 1e-5 }), {
      ...SETTINGS,
      steps: 7,
      evalEvery: 0,
    });
  });

  it('a change is laid over the earlier ones', () => {
    const live = applyLiveSet({ learning_rate: 1e-5, maxInFlight: 4 }, { learning_rate: 2e-5, temperature: 0.7 });
    assert.deepEqual(live, { learning_rate: 2e-5, maxInFlight: 4, temperature: 0.7 });
    assert.throws(() => applyLiveSet({}, { clip_ratio: 2 }), /clip_ratio: /);
  });

  it('rejects bad values and a step count below the steps already applied', () => {
    assert.doesNotThrow(() => checkLiveSet({ steps: 3 }, 3, 'grpo'));
    assert.throws(() => checkLiveSet({ steps: 2 }, 3, 'grpo'), /steps: 2 is below the 3 steps already applied/);
    assert.throws(() => checkLiveSet({ maxInFlight: 0 }, 0, 'grpo'), /maxInFlight: /);
  });

  it('refuses a critic setting on a run without a critic, naming the setting and why', () => {
    assert.throws(() => checkLiveSet({ value_learning_rate: 1e-5, learning_rate: 2e-6 }, 0, 'grpo'), {
      message: 'value_learning_rate: tunes the critic, and grpo trains none',
    });
    assert.doesNotThrow(() => checkLiveSet({ value_learning_rate: 1e-5 }, 0, 'ppo'));
    assert.doesNotThrow(() => checkLiveSet({ kl_coef: 0.05 }, 0, 'grpo'));
  });

  it('sends only hyperparameters to the optimizer, and nothing when none was set', () => {
    assert.equal(liveHyperparameters({}), undefined);
    assert.equal(liveHyperparameters({ maxInFlight: 2, steps: 9, temperature: 0.5 }), undefined);
    assert.deepEqual(liveHyperparameters({ steps: 9, kl_coef: 0.01, learning_rate: 2e-6 }), {
      kl_coef: 0.01,
      learning_rate: 2e-6,
    });
  });
});
