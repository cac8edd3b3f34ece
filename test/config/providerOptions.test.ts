import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { policyEndpointSchema, simulatorEndpointSchema } from '../../src/config/schema.js';
import { ENDPOINT_CALL_INTERNAL, endpointCallSchema } from '../../src/core/rolloutSettingsSchema.js';

/** A value of each provider option that differs from every default, so the test sees it arrive. */
const SAMPLE: Record<string, string> = {
  baseURL: 'http://127.0.0.1:9/v1',
  model: 'sample-model',
  apiKeyEnv: 'SAMPLE_KEY',
  timeoutMs: '4321',
  temperature: '0.37',
  topP: '0.83',
  maxTokens: '77',
};

describe('config: a provider option is one declaration, in the call schema', () => {
  const options = Object.keys(endpointCallSchema.omit(ENDPOINT_CALL_INTERNAL).shape);

  it('every provider option of the call schema is a setting of both endpoints', () => {
    for (const key of options) {
      assert.ok(key in policyEndpointSchema.shape, `policy.${key}`);
      assert.ok(key in simulatorEndpointSchema.shape, `simulator.${key}`);
    }
    assert.deepEqual(Object.keys(SAMPLE).sort(), [...options].sort(), 'a sample value for each option');
  });

  it("each endpoint's configured value reaches its calls under the same name", () => {
    for (const endpoint of ['policy', 'simulator'] as const) {
      const config = loadConfig({ env: {}, set: options.map((key) => `${endpoint}.${key}=${SAMPLE[key]}`) });
      const call = rolloutSettingsFromConfig(config)[endpoint] as Record<string, unknown>;
      for (const key of options) {
        // The key variable's name is resolved for the local endpoint; every other option arrives as set.
        if (key === 'apiKeyEnv') continue;
        assert.equal(String(call[key]), SAMPLE[key], `${endpoint}.${key}`);
      }
    }
  });
});
