import assert from 'node:assert/strict';
import { z } from 'zod';
import { endpointCallSchema } from '../../src/core/rolloutSettingsSchema.js';
import { LIVE_HYPERPARAMETERS, LIVE_SETTINGS_RULES, type LiveSettingName } from '../../src/core/training/liveSet.js';
import { hyperparametersSchema, trainingSettingsSchema } from '../../src/core/training/trainingSettingsSchema.js';
import { boundsOf, type Bounds } from '../support/jsonSchemaBounds.js';

const hyper = hyperparametersSchema.shape;
const training = trainingSettingsSchema.shape;

/** The zod field each live setting changes: the source of its bounds. */
const SOURCES: Record<LiveSettingName, z.ZodType> = {
  learning_rate: hyper.learning_rate,
  clip_ratio: hyper.clip_ratio,
  kl_coef: hyper.kl_coef,
  entropy_coef: hyper.entropy_coef,
  value_learning_rate: hyper.value_learning_rate,
  max_grad_norm: hyper.max_grad_norm,
  maxInFlight: training.maxInFlight,
  maxFailedShare: training.maxFailedShare,
  evalEvery: training.evalEvery,
  steps: training.steps,
  /** The policy's sampling temperature. */
  temperature: endpointCallSchema.shape.temperature,
};

function boundsOfRule(rule: { int?: boolean; min?: number; max?: number; gt?: number; lt?: number }): Bounds {
  return boundsOf({
    type: rule.int ? 'integer' : 'number',
    ...(rule.min !== undefined ? { minimum: rule.min } : {}),
    ...(rule.max !== undefined ? { maximum: rule.max } : {}),
    ...(rule.gt !== undefined ? { exclusiveMinimum: rule.gt } : {}),
    ...(rule.lt !== undefined ? { exclusiveMaximum: rule.lt } : {}),
  });
}

describe('live settings table', () => {
  it('has the bounds of the zod field each setting changes', () => {
    for (const [name, rule] of Object.entries(LIVE_SETTINGS_RULES) as [LiveSettingName, object][]) {
      const fromZod = boundsOf(z.toJSONSchema(SOURCES[name]));
      assert.deepEqual(boundsOfRule(rule), fromZod, name);
    }
  });
  it('covers every live hyperparameter, from the hyperparameters schema', () => {
    for (const name of LIVE_HYPERPARAMETERS) assert.equal(SOURCES[name], hyper[name], name);
  });
});
