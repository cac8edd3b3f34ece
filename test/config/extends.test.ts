import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { REPO_ROOT } from '../../src/paths.js';

/** Writes files (name -> YAML text) into a fresh folder; returns the folder. */
function configFolder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'attune-extends-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

function configErrorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail('expected a ConfigError');
}

describe('config files that extend others', () => {
  it('the LoRA paper presets load to exactly the self-contained files they replaced, and the full presets differ from them only in the weights trained and the rate', () => {
    const before = JSON.parse(
      readFileSync(join(REPO_ROOT, 'test/fixtures/configs/paper-presets-before-extends.json'), 'utf8'),
    ) as Record<string, unknown>;
    assert.equal(Object.keys(before).length, 4);
    // The self-contained files were written with the flat keys of their release: the loader still takes them.
    const dir = configFolder(
      Object.fromEntries(Object.entries(before).map(([name, tree]) => [`${name}.yaml`, JSON.stringify(tree)])),
    );
    const preset = (name: string) => loadConfig({ file: join(REPO_ROOT, 'configs', `${name}.yaml`), env: {} });
    for (const name of Object.keys(before)) {
      const lora = preset(name.replace('paper-', 'paper-lora-'));
      assert.deepEqual(lora, loadConfig({ file: join(dir, `${name}.yaml`), env: {}, onWarning: () => {} }), name);
      const full = preset(name);
      assert.equal(full.training.lora, null, name);
      assert.equal(full.training.hyperparameters.learning_rate, 1e-6, name);
      assert.deepEqual(
        {
          ...full,
          policy: { ...full.policy, maxLoraRank: lora.policy.maxLoraRank },
          training: {
            ...full.training,
            lora: lora.training.lora,
            snapshotEvery: lora.training.snapshotEvery, // full weights: a snapshot every 10 steps, LoRA every step
            hyperparameters: { ...full.training.hyperparameters, learning_rate: 1e-5 },
          },
        },
        lora,
        name,
      );
    }
  });

  it('extends a list of files in order, a later one over an earlier one', () => {
    const dir = configFolder({
      'a.yaml': 'policy:\n  model: from-a\n  maxTokens: 100\n',
      'b.yaml': 'policy:\n  model: from-b\n',
      'run.yaml': 'extends: [a.yaml, b.yaml]\ntraining:\n  steps: 3\n',
      'loop.yaml': 'extends: [a.yaml, loop.yaml]\n',
    });
    const config = loadConfig({ file: join(dir, 'run.yaml'), env: {} });
    assert.equal(config.policy.model, 'from-b');
    assert.equal(config.policy.maxTokens, 100);
    assert.equal(config.training.steps, 3);
    assert.match(configErrorOf(() => loadConfig({ file: join(dir, 'loop.yaml'), env: {} })).message, /a cycle/);
  });

  it('merges mappings key by key, base first; lists and null replace', () => {
    const dir = configFolder({
      'base.yaml':
        'policy:\n  model: base-model\n  maxTokens: 100\ntraining:\n  lora:\n    r: 8\n  evalScenarios: [a, b]\n  hyperparameters:\n    learning_rate: 1.0e-5\n    kl_coef: 0.1\n',
      'run.yaml':
        'extends: base.yaml\npolicy:\n  maxTokens: 200\ntraining:\n  lora: null\n  evalScenarios: [c]\n  hyperparameters:\n    kl_coef: 0.2\n',
    });
    const config = loadConfig({ file: join(dir, 'run.yaml'), env: {} });
    assert.equal(config.policy.model, 'base-model');
    assert.equal(config.policy.maxTokens, 200);
    assert.equal(config.training.lora, null);
    assert.deepEqual(config.training.evalScenarios, ['c']);
    assert.deepEqual(config.training.hyperparameters, { learning_rate: 1e-5, kl_coef: 0.2 });
  });

  it('resolves each extends relative to the file that names it, through several files', () => {
    const dir = configFolder({
      'presets/run.yaml': 'extends: ../shared/middle.yaml\nrollout:\n  dialogue:\n    maxTurns: 3\n',
      'shared/middle.yaml': 'extends: root.yaml\npolicy:\n  model: middle\n',
      'shared/root.yaml':
        'policy:\n  model: root\n  maxTokens: 64\nrollout:\n  dialogue:\n    maxTurns: 9\n    think: true\n',
    });
    const config = loadConfig({ file: join(dir, 'presets/run.yaml'), env: {} });
    assert.deepEqual(
      [config.policy.model, config.policy.maxTokens, config.rollout.dialogue.maxTurns, config.rollout.dialogue.think],
      ['middle', 64, 3, true],
    );
  });

  it('environment and --set still override keys from a base file', () => {
    const dir = configFolder({
      'base.yaml': 'policy:\n  model: base\nrollout:\n  dialogue:\n    maxTurns: 9\n',
      'run.yaml': 'extends: base.yaml\n',
    });
    const config = loadConfig({
      file: join(dir, 'run.yaml'),
      env: { POLICY_MODEL: 'env' },
      set: ['rollout.dialogue.maxTurns=2'],
    });
    assert.equal(config.policy.model, 'env');
    assert.equal(config.rollout.dialogue.maxTurns, 2);
  });

  it('rejects a cycle, naming the files', () => {
    const dir = configFolder({
      'a.yaml': 'extends: b.yaml\n',
      'b.yaml': 'extends: a.yaml\n',
      'self.yaml': 'extends: ./self.yaml\n',
    });
    const cycle = configErrorOf(() => loadConfig({ file: join(dir, 'a.yaml'), env: {} }));
    assert.ok(cycle.message.startsWith(`${join(dir, 'b.yaml')}: extends a.yaml: a cycle`), cycle.message);
    assert.ok(cycle.message.includes(`${join(dir, 'a.yaml')} -> ${join(dir, 'b.yaml')} -> ${join(dir, 'a.yaml')}`));
    const self = configErrorOf(() => loadConfig({ file: join(dir, 'self.yaml'), env: {} }));
    assert.match(self.message, /self\.yaml: extends \.\/self\.yaml: a cycle/);
  });

  it('rejects a missing base file, naming the file that refers to it', () => {
    const dir = configFolder({ 'run.yaml': 'extends: nowhere.yaml\n', 'mid.yaml': 'extends: run.yaml\n' });
    const error = configErrorOf(() => loadConfig({ file: join(dir, 'mid.yaml'), env: {} }));
    assert.equal(
      error.message,
      `${join(dir, 'run.yaml')}: extends nowhere.yaml: no such config file ${join(dir, 'nowhere.yaml')}`,
    );
  });

  it('rejects an extends that is not a file name or a list of them', () => {
    for (const value of ['[]', '[a.yaml, 3]', '3', "''", '{file: a.yaml}']) {
      const dir = configFolder({ 'run.yaml': `extends: ${value}\n` });
      const error = configErrorOf(() => loadConfig({ file: join(dir, 'run.yaml'), env: {} }));
      assert.match(error.message, /run\.yaml: extends must be the name of a config file/, value);
    }
  });

  it('validates the merged keys, naming the file given and the base file a bad key came from', () => {
    const dir = configFolder({
      'base.yaml': 'policy:\n  modle: typo\nrollout:\n  dialogue:\n    maxTurns: 500\n',
      'run.yaml': 'extends: base.yaml\nsimulator:\n  temprature: 0\n',
    });
    const run = join(dir, 'run.yaml');
    const error = configErrorOf(() => loadConfig({ file: run, env: {} }));
    const lines = error.message.split('\n');
    assert.equal(lines[0], `${run}: invalid configuration`);
    assert.ok(lines.includes(`  - policy.modle: unknown key (in ${join(dir, 'base.yaml')})`), error.message);
    assert.ok(
      lines.some(
        (l) => l.startsWith('  - rollout.dialogue.maxTurns: ') && l.endsWith(`(in ${join(dir, 'base.yaml')})`),
      ),
    );
    assert.ok(lines.includes('  - simulator.temprature: unknown key'), error.message);
  });

  it('a key set in the file given, the environment or --set is not blamed on the base file', () => {
    const dir = configFolder({
      'base.yaml': 'policy:\n  baseURL: http://base:1/v1\nrollout:\n  dialogue:\n    maxTurns: 5\n',
      'run.yaml': 'extends: base.yaml\nrollout:\n  dialogue:\n    maxTurns: 500\n',
      'plain.yaml': 'extends: base.yaml\n',
    });
    const fromFile = configErrorOf(() => loadConfig({ file: join(dir, 'run.yaml'), env: {} }));
    assert.match(fromFile.message, /rollout\.dialogue\.maxTurns: /);
    const fromSet = configErrorOf(() =>
      loadConfig({ file: join(dir, 'plain.yaml'), env: {}, set: ['rollout.dialogue.maxTurns=500'] }),
    );
    assert.match(fromSet.message, /rollout\.dialogue\.maxTurns: /);
    const fromEnv = configErrorOf(() =>
      loadConfig({ file: join(dir, 'plain.yaml'), env: { POLICY_BASE_URL: 'not a url' } }),
    );
    assert.match(fromEnv.message, /policy\.baseURL: /);
    for (const error of [fromFile, fromSet, fromEnv]) assert.doesNotMatch(error.message, /\(in /);
  });
});
