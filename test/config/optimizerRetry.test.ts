import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { OPTIMIZER_RETRY } from '../../src/core/training/optimizerRetry.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const BASE = [`scenarios.train=${FIXTURE_SCENARIOS}`, `scenarios.eval=${FIXTURE_SCENARIOS}`];
const settings = (set: string[]) => trainingSettingsFromConfig(loadConfig({ env: {}, set: [...BASE, ...set] }), 'run');

describe('training.trainer.retry: the waits between attempts at an optimizer step', () => {
  it("reach the run's settings as set, and default to 2 s doubling up to a minute", () => {
    assert.deepEqual(settings([]).trainer.retry, OPTIMIZER_RETRY);
    assert.deepEqual(OPTIMIZER_RETRY, { initialIntervalMs: 2000, maximumIntervalMs: 60_000 });
    assert.deepEqual(
      settings(['training.trainer.retry.initialIntervalMs=1000', 'training.trainer.retry.maximumIntervalMs=4000'])
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
            'training.trainer.retry.initialIntervalMs=5000',
            'training.trainer.retry.maximumIntervalMs=4000',
          ],
        }),
      /training\.trainer\.retry: initialIntervalMs must not exceed maximumIntervalMs/,
    );
  });

  it('the group written as training.optimizerRetry of earlier releases, whole or key by key in --set, takes the same waits and warns once naming training.trainer.retry', () => {
    const warnings: string[] = [];
    const load = (set: string[]) =>
      trainingSettingsFromConfig(
        loadConfig({ env: {}, set: [...BASE, ...set], onWarning: (w) => warnings.push(w) }),
        'run',
      ).trainer.retry;
    const waits = { initialIntervalMs: 1000, maximumIntervalMs: 4000 };
    assert.deepEqual(
      load(['training.optimizerRetry.initialIntervalMs=1000', 'training.optimizerRetry.maximumIntervalMs=4000']),
      waits,
    );
    assert.deepEqual(load(['training.optimizerRetry={initialIntervalMs: 1000, maximumIntervalMs: 4000}']), waits);
    assert.deepEqual(warnings, [
      'training.optimizerRetry is deprecated: write training.trainer.retry',
      'training.optimizerRetry is deprecated: write training.trainer.retry',
    ]);
  });
});
