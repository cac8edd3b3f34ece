import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { OPTIMIZER_RETRY } from '../../src/core/training/optimizerRetry.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const BASE = [`scenarios.train=${FIXTURE_SCENARIOS}`, `scenarios.eval=${FIXTURE_SCENARIOS}`];
const settings = (set: string[]) => trainingSettingsFromConfig(loadConfig({ env: {}, set: [...BASE, ...set] }), 'run');

describe('training.optimizerRetry: the waits between attempts at an optimizer step', () => {
  it("reach the run's settings as set, and default to 2 s doubling up to a minute", () => {
    assert.deepEqual(settings([]).trainer.retry, OPTIMIZER_RETRY);
    assert.deepEqual(OPTIMIZER_RETRY, { initialIntervalMs: 2000, maximumIntervalMs: 60_000 });
    assert.deepEqual(
      settings(['training.optimizerRetry.initialIntervalMs=1000', 'training.optimizerRetry.maximumIntervalMs=4000'])
        .trainer.retry,
      { initialIntervalMs: 1000, maximumIntervalMs: 4000 },
    );
  });

  it('refuses a first wait longer than the longest (Temporal would refuse the activity)', () => {
    assert.throws(
      () =>
        loadConfig({
          env: {},
          set: [
            ...BASE,
            'training.optimizerRetry.initialIntervalMs=5000',
            'training.optimizerRetry.maximumIntervalMs=4000',
          ],
        }),
      /training\.optimizerRetry: initialIntervalMs must not exceed maximumIntervalMs/,
    );
  });
});
