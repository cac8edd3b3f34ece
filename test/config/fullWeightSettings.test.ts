import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { stepRolloutSettings } from '../../src/core/training/stepPlan.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const BASE = [
  `scenarios.train=${FIXTURE_SCENARIOS}`,
  `scenarios.eval=${FIXTURE_SCENARIOS}`,
  'training.publish.mode=vllm',
  'policy.model=served-model',
  'training.evalEvery=1',
];

describe('a full fine-tuning run published to vLLM: its settings', () => {
  it("samples the served model's name at weight version run@k (step 0: run@0, the base); a LoRA run samples run@k as the model name", () => {
    const full = trainingSettingsFromConfig(loadConfig({ env: {}, set: BASE }), 'run');
    assert.equal(full.publish.weights, 'full');
    assert.equal(full.publish.baseVersion, 'run@0');
    assert.equal(full.rollout.policy.model, 'served-model');
    assert.equal(full.rollout.policy.weightVersion, 'run@0');
    assert.ok(full.rollout.policy.reloadFrom, 'a restarted vLLM is reloaded from the trainer');
    assert.equal(full.evalSettings?.policy.model, 'served-model');
    assert.equal(full.evalSettings?.policy.weightVersion, 'run@0');
    const step3 = stepRolloutSettings(full.rollout, 'run@2', undefined).policy;
    assert.deepEqual([step3.model, step3.weightVersion], ['served-model', 'run@2']);

    const lora = trainingSettingsFromConfig(loadConfig({ env: {}, set: [...BASE, 'training.lora.r=8'] }), 'run');
    assert.equal(lora.publish.weights, undefined);
    assert.equal(lora.publish.baseVersion, 'served-model');
    assert.equal(lora.rollout.policy.weightVersion, undefined);
    const loraStep = stepRolloutSettings(lora.rollout, 'run@2', undefined).policy;
    assert.deepEqual([loraStep.model, loraStep.weightVersion], ['run@2', undefined]);
  });
});
