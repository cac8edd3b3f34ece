import assert from 'node:assert/strict';
import { configSchema } from '../../src/config/schema.js';

describe('config defaults', () => {
  it('an absent section is the same as an empty one: each default is written once, on its key', () => {
    const sections = Object.keys(configSchema.shape).filter((key) => key !== 'home');
    const empty = Object.fromEntries(sections.map((key) => [key, {}]));
    assert.deepEqual(configSchema.parse({}), configSchema.parse(empty));
    const nested = {
      temporal: { devServer: {} },
      policy: { retry: {} },
      simulator: { retry: {} },
      training: { hyperparameters: {} },
    };
    assert.deepEqual(configSchema.parse({}), configSchema.parse(nested));
  });

  it('a section given in part gets the defaults of the rest', () => {
    const config = configSchema.parse({ temporal: { namespace: 'ns' }, policy: { retry: { maximumAttempts: 2 } } });
    assert.deepEqual(config.temporal, {
      namespace: 'ns',
      taskQueuePrefix: '',
      devServer: { port: 7233, uiPort: 8233 },
    });
    assert.deepEqual(config.policy.retry, {
      initialIntervalMs: 1000,
      backoffCoefficient: 2,
      maximumIntervalMs: 60_000,
      maximumAttempts: 2,
    });
    assert.equal(config.policy.temperature, 1);
    assert.equal(config.simulator.temperature, 0);
  });

  it('every load gets its own default objects', () => {
    const a = configSchema.parse({});
    const b = configSchema.parse({});
    a.policy.retry.maximumAttempts = 99;
    a.training.hyperparameters.learning_rate = 0.5;
    assert.equal(b.policy.retry.maximumAttempts, 8);
    assert.deepEqual(b.training.hyperparameters, {});
  });
});
