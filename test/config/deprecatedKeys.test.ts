import assert from 'node:assert/strict';
import { join } from 'node:path';
import { stringify as yamlOf } from 'yaml';
import { buildEvaluationInput } from '../../src/config/evaluationInputFromConfig.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { configFolder, FLAT_CREDIT_YAML, NESTED_CREDIT_YAML } from '../support/flatCreditConfig.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const SCENARIOS = [`scenarios.train=${FIXTURE_SCENARIOS}`, `scenarios.eval=${FIXTURE_SCENARIOS}`];

/**
 * The dialogue keys of each section, written flat as earlier releases did and as the `dialogue` group
 * they became; every value off its default, and evaluation's think off rollout's, so each key counts.
 */
const DIALOGUE_VALUES = {
  rollout: { initialEmotion: 41, maxTurns: 3, think: true },
  evaluation: { initialEmotion: 45, maxTurns: 5, think: false },
  training: { initialEmotion: 25, maxTurns: 4, think: true },
};
const FLAT_DIALOGUE_YAML = yamlOf({ ...DIALOGUE_VALUES, training: { ...DIALOGUE_VALUES.training, evalEvery: 1 } });
const NESTED_DIALOGUE_YAML = yamlOf({
  rollout: { dialogue: DIALOGUE_VALUES.rollout },
  evaluation: { dialogue: DIALOGUE_VALUES.evaluation },
  training: { dialogue: DIALOGUE_VALUES.training, evalEvery: 1 },
});
const FLAT_DIALOGUE_WARNINGS = Object.entries(DIALOGUE_VALUES).flatMap(([section, values]) =>
  Object.keys(values).map((key) => `${section}.${key} is deprecated: write ${section}.dialogue.${key}`),
);

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
    assert.deepEqual(flat.config.training.publish, {
      mode: 'vllm',
      keep: 3,
      publisherWaitMs: 5000,
      transport: 'checkpoint',
      replicaUpdates: 'every',
    });
    assert.deepEqual(trainingSettingsFromConfig(flat.config, 'r'), trainingSettingsFromConfig(nested.config, 'r'));
    assert.deepEqual(flat.warnings, [
      'training.publish is deprecated: write training.publish.mode',
      'training.publishKeep is deprecated: write training.publish.keep',
      'training.publisherWaitMs is deprecated: write training.publish.publisherWaitMs',
    ]);
    assert.deepEqual(nested.warnings, []);
  });

  it('flat training.stepTimeoutMs, heartbeatTimeoutMs, sameErrorAttempts and the optimizerRetry group give the same workflow input as training.trainer { ..., retry }, warning once per key', () => {
    const trainer = { stepTimeoutMs: 3_600_000, heartbeatTimeoutMs: 30_000, sameErrorAttempts: 7 };
    const retry = { initialIntervalMs: 1000, maximumIntervalMs: 4000 };
    const files = configFolder({
      'flat.yaml': yamlOf({ training: { ...trainer, optimizerRetry: retry } }),
      'nested.yaml': yamlOf({ training: { trainer: { ...trainer, retry } } }),
    });
    const flat = load(join(files, 'flat.yaml'), ['training.stepTimeoutMs=7200000']);
    const nested = load(join(files, 'nested.yaml'), ['training.trainer.stepTimeoutMs=7200000']);
    assert.deepEqual(flat.config.training.trainer, { ...trainer, stepTimeoutMs: 7_200_000, retry });
    assert.deepEqual(flat.config, nested.config);
    const settings = trainingSettingsFromConfig(flat.config, 'r');
    assert.deepEqual(settings, trainingSettingsFromConfig(nested.config, 'r'));
    assert.equal(settings.trainer.sameErrorAttempts, 7, 'the workflow input takes the group as it is');
    assert.deepEqual(settings.trainer.retry, retry);
    assert.deepEqual(flat.warnings, [
      ...Object.keys(trainer).map((key) => `training.${key} is deprecated: write training.trainer.${key}`),
      'training.optimizerRetry is deprecated: write training.trainer.retry',
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

  describe('the flat dialogue keys of rollout, evaluation and training', () => {
    const files = configFolder({
      'flat.yaml': FLAT_DIALOGUE_YAML,
      'nested.yaml': NESTED_DIALOGUE_YAML,
      'flat-on-flat.yaml': `extends: flat.yaml\n${FLAT_DIALOGUE_YAML}`,
      'both.yaml': 'evaluation:\n  maxTurns: 5\n  dialogue:\n    maxTurns: 6\n',
    });

    it('give the same config, rollout, evaluation and training inputs as the dialogue groups, warning once per key', () => {
      const flat = load(join(files, 'flat.yaml'));
      const nested = load(join(files, 'nested.yaml'));
      assert.deepEqual(flat.config.rollout.dialogue, DIALOGUE_VALUES.rollout);
      assert.deepEqual(flat.config.evaluation.dialogue, DIALOGUE_VALUES.evaluation);
      assert.deepEqual(flat.config.training.dialogue, DIALOGUE_VALUES.training);
      assert.deepEqual(flat.config, nested.config);
      assert.deepEqual(rolloutSettingsFromConfig(flat.config), rolloutSettingsFromConfig(nested.config));
      const evaluation = { split: 'eval', evalId: 'e' } as const;
      assert.deepEqual(buildEvaluationInput(flat.config, evaluation), buildEvaluationInput(nested.config, evaluation));
      assert.deepEqual(trainingSettingsFromConfig(flat.config, 'r'), trainingSettingsFromConfig(nested.config, 'r'));
      assert.deepEqual(flat.warnings, FLAT_DIALOGUE_WARNINGS);
      assert.deepEqual(nested.warnings, [], 'the nested form warns of nothing');
    });

    it('--set takes them flat (rollout.maxTurns=3) and nested, warning once per key across a file, its base and --set', () => {
      const flatSet = load(
        join(files, 'nested.yaml'),
        Object.entries(DIALOGUE_VALUES).flatMap(([section, values]) =>
          Object.keys(values).map((key) => `${section}.${key}=${key === 'think' ? 'false' : '7'}`),
        ),
      );
      for (const section of ['rollout', 'evaluation', 'training'] as const)
        assert.deepEqual(flatSet.config[section].dialogue, { initialEmotion: 7, maxTurns: 7, think: false }, section);
      assert.deepEqual(flatSet.warnings, FLAT_DIALOGUE_WARNINGS);
      const twice = load(join(files, 'flat-on-flat.yaml'), ['rollout.maxTurns=2', 'rollout.dialogue.think=false']);
      assert.deepEqual(twice.config.rollout.dialogue, { initialEmotion: 41, maxTurns: 2, think: false });
      assert.deepEqual(twice.warnings, FLAT_DIALOGUE_WARNINGS);
    });

    it('a file setting evaluation.maxTurns and evaluation.dialogue.maxTurns is an error naming both', () => {
      assert.throws(
        () => load(join(files, 'both.yaml')),
        (error: unknown) =>
          error instanceof ConfigError &&
          /both\.yaml: evaluation\.maxTurns and evaluation\.dialogue\.maxTurns are both set/.test(error.message),
      );
    });
  });
});
