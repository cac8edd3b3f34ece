import assert from 'node:assert/strict';
import { z } from 'zod';
import { endpointCallSchema } from '../../src/core/rolloutSettingsSchema.js';
import { LIVE_HYPERPARAMETER_RULES } from '../../src/core/training/liveHyperparameters.generated.js';
import {
  LIVE_SETTINGS_RULES,
  type LiveHyperparameterName,
  type LiveSettingName,
} from '../../src/core/training/liveSet.js';
import { trainingSettingsSchema } from '../../src/core/training/trainingSettingsSchema.js';
import { boundsOf, type Bounds } from '../support/jsonSchemaBounds.js';

const training = trainingSettingsSchema.shape;

type OrchestratorSetting = Exclude<LiveSettingName, LiveHyperparameterName>;

/** The zod field each orchestrator-side live setting changes: the source of its bounds. */
const SOURCES: Record<OrchestratorSetting, z.ZodType> = {
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
  it('has the bounds of the zod field each orchestrator setting changes', () => {
    for (const [name, source] of Object.entries(SOURCES) as [OrchestratorSetting, z.ZodType][]) {
      assert.deepEqual(boundsOfRule(LIVE_SETTINGS_RULES[name]), boundsOf(z.toJSONSchema(source)), name);
    }
  });
  it('takes every hyperparameter rule from the generated table', () => {
    for (const [name, rule] of Object.entries(LIVE_HYPERPARAMETER_RULES))
      assert.equal(LIVE_SETTINGS_RULES[name as LiveHyperparameterName], rule, name);
  });
});
