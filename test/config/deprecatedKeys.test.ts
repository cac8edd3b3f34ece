import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { configFolder, FLAT_CREDIT_YAML, NESTED_CREDIT_YAML } from '../support/flatCreditConfig.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const SCENARIOS = [`scenarios.train=${FIXTURE_SCENARIOS}`, `scenarios.eval=${FIXTURE_SCENARIOS}`];

function load(file: string, set: string[] = []) {
  const warnings: string[] = [];
  const config = loadConfig({ file, env: {}, set: [...SCENARIOS, ...set], onWarning: (w) => warnings.push(w) });
  return { config, warnings };
}

describe('config: the flat keys of earlier releases still load, with a warning naming the new key', () => {
  const dir = configFolder({
    'flat.yaml': FLAT_CREDIT_YAML,
    'nested.yaml': NESTED_CREDIT_YAML,
    'flat-on-flat.yaml': `extends: flat.yaml\n${FLAT_CREDIT_YAML}`,
    'both.yaml': 'training:\n  turnDiscount: 0.9\n  credit:\n    turnDiscount: 0.8\n',
  });

  it('flat training.credit, turnDiscount and creditWeight give the same workflow input as training.credit { mode, turnDiscount, weight }, warning once per key', () => {
    const flat = load(join(dir, 'flat.yaml'));
    const nested = load(join(dir, 'nested.yaml'));
    assert.deepEqual(flat.config.training.credit, { mode: 'mixed', turnDiscount: 0.9, weight: 0.3 });
    assert.deepEqual(trainingSettingsFromConfig(flat.config, 'r'), trainingSettingsFromConfig(nested.config, 'r'));
    assert.deepEqual(flat.warnings, [
      'training.credit is deprecated: write training.credit.mode',
      'training.turnDiscount is deprecated: write training.credit.turnDiscount',
      'training.creditWeight is deprecated: write training.credit.weight',
    ]);
    assert.deepEqual(nested.warnings, [], 'the nested form warns of nothing');
  });

  it('a key written flat in a file and in the file it extends, and again in --set, warns once', () => {
    const { config, warnings } = load(join(dir, 'flat-on-flat.yaml'), ['training.turnDiscount=0.7']);
    assert.deepEqual(config.training.credit, { mode: 'mixed', turnDiscount: 0.7, weight: 0.3 });
    assert.equal(warnings.length, 3, warnings.join('\n'));
    assert.equal(new Set(warnings).size, 3);
  });

  it('--set takes the flat keys and the nested ones, and a nested --set refines a flat file', () => {
    const flatSet = load(join(dir, 'nested.yaml'), ['training.credit=turn', 'training.creditWeight=0.1']);
    assert.deepEqual(flatSet.config.training.credit, { mode: 'turn', turnDiscount: 0.9, weight: 0.1 });
    assert.equal(flatSet.warnings.length, 2);
    const nestedSet = load(join(dir, 'flat.yaml'), ['training.credit.turnDiscount=0.5']);
    assert.deepEqual(nestedSet.config.training.credit, { mode: 'mixed', turnDiscount: 0.5, weight: 0.3 });
    const defaults = loadConfig({ env: {}, set: ['training.credit.turnDiscount=0.9'] });
    assert.deepEqual(defaults.training.credit, { mode: 'final', turnDiscount: 0.9, weight: 0.5 });
  });

  it('flat training.publish, publishKeep and publisherWaitMs give the same workflow input as training.publish { mode, keep, publisherWaitMs }', () => {
    const replicas = ['policy.replicas=a=http://127.0.0.1:8001/v1,b=http://127.0.0.1:8002/v1', 'training.lora.r=8'];
    const files = configFolder({
      'flat.yaml': 'training:\n  publish: vllm\n  publishKeep: 3\n  publisherWaitMs: 5000\n',
      'nested.yaml': 'training:\n  publish:\n    mode: vllm\n    keep: 3\n    publisherWaitMs: 5000\n',
    });
    const flat = load(join(files, 'flat.yaml'), replicas);
    const nested = load(join(files, 'nested.yaml'), replicas);
    assert.deepEqual(flat.config.training.publish, { mode: 'vllm', keep: 3, publisherWaitMs: 5000 });
    assert.deepEqual(trainingSettingsFromConfig(flat.config, 'r'), trainingSettingsFromConfig(nested.config, 'r'));
    assert.deepEqual(flat.warnings, [
      'training.publish is deprecated: write training.publish.mode',
      'training.publishKeep is deprecated: write training.publish.keep',
      'training.publisherWaitMs is deprecated: write training.publish.publisherWaitMs',
    ]);
    assert.deepEqual(nested.warnings, []);
  });

  it('one file setting a flat key and its nested key is an error naming both', () => {
    assert.throws(
      () => load(join(dir, 'both.yaml')),
      (error: unknown) =>
        error instanceof ConfigError &&
        /both\.yaml: training\.turnDiscount and training\.credit\.turnDiscount are both set/.test(error.message),
    );
  });
});
