import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configWarnings } from '../../src/config/crossFieldChecks.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { REPO_ROOT } from '../../src/paths.js';

function yamlFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'attune-cfg-')), 'config.yaml');
  writeFileSync(file, text);
  return file;
}

describe('configuration', () => {
  it('has working defaults (local endpoints, SAGE initial emotion)', () => {
    const config = loadConfig({ env: {} });
    assert.equal(config.rollout.dialogue.initialEmotion, 40);
    assert.equal(config.simulator.temperature, 0);
    assert.match(config.policy.baseURL, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    assert.equal(config.temporal.address, undefined);
  });
  it('training.maxStaleness: 0 by default, bounded, and needs the checkpoints its rollouts sample kept', () => {
    assert.equal(loadConfig({ env: {} }).training.maxStaleness, 0);
    assert.equal(loadConfig({ env: {}, set: ['training.maxStaleness=1'] }).training.maxStaleness, 1);
    assert.throws(
      () => loadConfig({ env: {}, set: ['training.maxStaleness=9'] }),
      /training\.maxStaleness.*at most 8/s,
    );
    assert.throws(
      () => loadConfig({ env: {}, set: ['training.maxStaleness=1', 'training.hyperparameters.keep_checkpoints=1'] }),
      /training\.hyperparameters\.keep_checkpoints.*keep at least 2/s,
    );
    loadConfig({ env: {}, set: ['training.maxStaleness=1', 'training.hyperparameters.keep_checkpoints=2'] });
  });
  it('training.publish.mode: vllm takes full fine-tuning on one vLLM (with in-flight updates at maxStaleness 1 or more), or a LoRA at a rank within policy.maxLoraRank (vLLM: 16 by default)', () => {
    const full = loadConfig({ env: {}, set: ['training.publish.mode=vllm'] });
    assert.equal(full.training.lora, null);
    const inFlight = loadConfig({ env: {}, set: ['training.publish.mode=vllm', 'training.maxStaleness=1'] });
    assert.deepEqual([inFlight.training.lora, inFlight.training.maxStaleness], [null, 1]);
    assert.equal(loadConfig({ env: {}, set: [] }).policy.maxLoraRank, 16);
    assert.throws(
      () => loadConfig({ env: {}, set: ['training.publish.mode=vllm', 'training.lora.r=64'] }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /training\.lora\.r 64 is above policy\.maxLoraRank 16/.test(error.message) &&
        /--max-lora-rank/.test(error.message),
    );
    const accepted = loadConfig({
      env: {},
      set: ['training.publish.mode=vllm', 'training.lora.r=64', 'policy.maxLoraRank=64'],
    });
    assert.equal(accepted.training.lora?.r, 64);
    assert.equal(accepted.policy.maxLoraRank, 64);
    assert.equal(
      loadConfig({ env: {}, set: ['training.publish.mode=vllm', 'training.lora.r=16'] }).training.lora?.r,
      16,
    );
    // the trainer serves any rank and full fine-tuning itself
    loadConfig({ env: {}, set: ['training.publish.mode=trainer', 'training.lora.r=64'] });
    loadConfig({ env: {}, set: ['training.publish.mode=trainer'] });
  });
  it('warns when full-weight publishing targets a vLLM off loopback without an API key (dev mode runs any worker method)', () => {
    const remote = ['training.publish.mode=vllm', 'policy.baseURL=http://10.0.0.5:8000/v1'];
    const warned = configWarnings(loadConfig({ env: {}, set: remote }), {});
    assert.equal(warned.length, 1);
    assert.match(warned[0]!, /http:\/\/10\.0\.0\.5:8000\/v1 is not a loopback address and \$POLICY_API_KEY is empty/);
    assert.match(warned[0]!, /collective_rpc/);
    assert.deepEqual(configWarnings(loadConfig({ env: {}, set: remote }), { POLICY_API_KEY: 'k' }), []);
    for (const baseURL of ['http://127.0.0.1:8000/v1', 'http://localhost:8000/v1', 'http://[::1]:8000/v1'])
      assert.deepEqual(
        configWarnings(loadConfig({ env: {}, set: ['training.publish.mode=vllm', `policy.baseURL=${baseURL}`] }), {}),
        [],
        baseURL,
      );
    // a LoRA run needs no dev mode
    assert.deepEqual(configWarnings(loadConfig({ env: {}, set: [...remote, 'training.lora.r=8'] }), {}), []);
  });

  it('every config in configs/ loads', () => {
    const dir = join(REPO_ROOT, 'configs');
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
    assert.ok(files.length >= 5, files.join(', '));
    for (const file of files) loadConfig({ file: join(dir, file), env: {} });
  });

  it('layers file < environment < --set', () => {
    const file = yamlFile(
      'policy:\n  baseURL: http://file:1/v1\n  model: from-file\nrollout:\n  dialogue:\n    maxTurns: 5\n',
    );
    const config = loadConfig({
      file,
      env: {
        POLICY_MODEL: 'from-env',
        SIMULATOR_BASE_URL: 'http://sim:2/v1',
        TEMPORAL_ADDRESS: 'temporal:7233',
        ATTUNE_HOME: '/tmp/h',
      },
      set: ['rollout.dialogue.maxTurns=3', 'rollout.dialogue.think=true'],
    });
    assert.equal(config.policy.baseURL, 'http://file:1/v1');
    assert.equal(config.policy.model, 'from-env');
    assert.equal(config.simulator.baseURL, 'http://sim:2/v1');
    assert.equal(config.temporal.address, 'temporal:7233');
    assert.equal(config.home, '/tmp/h');
    assert.equal(config.rollout.dialogue.maxTurns, 3);
    assert.equal(config.rollout.dialogue.think, true);
  });
  it('rejects unknown keys naming the file and the key', () => {
    const file = yamlFile('policy:\n  baseURL: http://x:1/v1\n  modle: typo\n');
    assert.throws(
      () => loadConfig({ file, env: {} }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.ok(error.message.includes(file));
        assert.match(error.message, /policy\.modle: unknown key/);
        return true;
      },
    );
  });
  it('rejects bad values naming the key', () => {
    assert.throws(
      () => loadConfig({ env: {}, set: ['rollout.dialogue.initialEmotion=140'] }),
      /rollout\.dialogue\.initialEmotion/,
    );
    assert.throws(() => loadConfig({ env: { POLICY_BASE_URL: 'not a url' } }), /policy\.baseURL/);
    assert.throws(() => loadConfig({ env: {}, set: ['nonsense'] }), /expected key=value/);
    assert.throws(() => loadConfig({ file: '/nonexistent/attune.yaml', env: {} }), /no such config file/);
    assert.throws(() => loadConfig({ env: {}, set: ['rollout.llmCalls=remote'] }), /rollout\.llmCalls/);
  });
  it('rejects YAML aliases without an anchor or past the alias limit as a ConfigError naming the file', () => {
    for (const text of [
      '*a\n',
      'a0: &a0 [x]\na1: &a1 [*a0, *a0, *a0, *a0]\na2: &a2 [*a1, *a1, *a1, *a1]\na3: &a3 [*a2, *a2, *a2, *a2]\n',
    ]) {
      const file = yamlFile(text);
      assert.throws(
        () => loadConfig({ file, env: {} }),
        (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${file}: YAML error`),
      );
    }
  });
  it('rejects a __proto__ key as unknown instead of reading the keys below it', () => {
    const file = yamlFile('__proto__:\n  rollout:\n    dialogue:\n      maxTurns: 3\n');
    assert.throws(() => loadConfig({ file, env: {} }), /__proto__: unknown key/);
    assert.throws(
      () => loadConfig({ file: yamlFile('training:\n  seed: 0\n__proto__: ""\n'), env: {} }),
      /__proto__: unknown key/,
    );
  });
  it('reads !!set, !!omap and !!pairs as the plain mapping or list they are written as, not as an empty section', () => {
    assert.throws(() => loadConfig({ file: yamlFile('policy: !!omap [model: 1]\n'), env: {} }), /policy: /);
    assert.throws(() => loadConfig({ file: yamlFile('rollout: !!set {llmCalls}\n'), env: {} }), /rollout\.llmCalls: /);
    assert.throws(() => loadConfig({ env: {}, set: ['rollout=!!set {llmCalls}'] }), /rollout\.llmCalls: /);
  });
  it('passes rollout.activityPer to the workflows (turn by default), with the turns queue', () => {
    assert.throws(() => loadConfig({ env: {}, set: ['rollout.activityPer=dialogue'] }), /rollout\.activityPer/);
    assert.equal(rolloutSettingsFromConfig(loadConfig({ env: {} })).activityPer, 'turn');
    assert.equal(
      rolloutSettingsFromConfig(loadConfig({ env: {}, set: ['rollout.activityPer=call'] })).activityPer,
      'call',
    );
    const settings = rolloutSettingsFromConfig(
      loadConfig({ env: {}, set: ['rollout.activityPer=turn', 'temporal.taskQueuePrefix=t1-'] }),
    );
    assert.equal(settings.activityPer, 'turn');
    assert.equal(settings.turnsTaskQueue, 't1-attune-llm-turns');
  });

  it("gives rollouts a 20 s workflow-task timeout with local calls (the default), Temporal's default otherwise, or rollout.workflowTaskTimeoutMs", () => {
    assert.equal(rolloutSettingsFromConfig(loadConfig({ env: {} })).workflowTaskTimeoutMs, 20_000);
    assert.equal(
      rolloutSettingsFromConfig(loadConfig({ env: {}, set: ['rollout.llmCalls=activity'] })).workflowTaskTimeoutMs,
      undefined,
    );
    assert.equal(
      rolloutSettingsFromConfig(
        loadConfig({ env: {}, set: ['rollout.llmCalls=local', 'rollout.workflowTaskTimeoutMs=20000'] }),
      ).workflowTaskTimeoutMs,
      20_000,
    );
    assert.throws(
      () => loadConfig({ env: {}, set: ['rollout.workflowTaskTimeoutMs=600000'] }),
      /rollout\.workflowTaskTimeoutMs/,
    );
  });

  it('passes rollout.maxWaitMinutes to the rollouts: a day by default, 0 to fail at once, never negative', () => {
    assert.equal(rolloutSettingsFromConfig(loadConfig({ env: {} })).maxWaitMinutes, 1440);
    assert.equal(
      rolloutSettingsFromConfig(loadConfig({ env: {}, set: ['rollout.maxWaitMinutes=0.5'] })).maxWaitMinutes,
      0.5,
    );
    assert.equal(
      rolloutSettingsFromConfig(loadConfig({ env: {}, set: ['rollout.maxWaitMinutes=0'] })).maxWaitMinutes,
      0,
    );
    assert.throws(() => loadConfig({ env: {}, set: ['rollout.maxWaitMinutes=-1'] }), /rollout\.maxWaitMinutes/);
  });

  it('passes rollout.llmCalls to the workflows (local by default)', () => {
    assert.equal(rolloutSettingsFromConfig(loadConfig({ env: {} })).llmCalls, 'local');
    assert.equal(
      rolloutSettingsFromConfig(loadConfig({ env: {}, set: ['rollout.llmCalls=activity'] })).llmCalls,
      'activity',
    );
  });
  it('sends the local model server its token: endpoints at that server read LOCAL_LLM_TOKEN once it is set', () => {
    const env = { LOCAL_LLM_TOKEN: 'a-local-token', SIMULATOR_BASE_URL: 'https://api.example.com/v1' };
    const config = loadConfig({ env });
    assert.equal(config.localLlm.tokenEnv, 'LOCAL_LLM_TOKEN');
    const settings = rolloutSettingsFromConfig(config);
    assert.equal(settings.policy.apiKeyEnv, 'LOCAL_LLM_TOKEN');
    assert.equal(settings.simulator.apiKeyEnv, 'SIMULATOR_API_KEY');
    assert.ok(!JSON.stringify(settings).includes('a-local-token'));
    const named = loadConfig({
      env: {},
      set: ['localLlm.tokenEnv=MY_LLM_TOKEN', 'localLlm.port=9000', 'simulator.baseURL=http://localhost:9000/v1'],
    });
    assert.equal(rolloutSettingsFromConfig(named).simulator.apiKeyEnv, 'MY_LLM_TOKEN');
    assert.equal(rolloutSettingsFromConfig(named).policy.apiKeyEnv, 'POLICY_API_KEY');
    assert.equal(loadConfig({ env: {} }).localLlm.tokenEnv, undefined);
  });
  it('keeps API keys out of workflow settings: only the variable name travels', () => {
    const settings = rolloutSettingsFromConfig(loadConfig({ env: { POLICY_API_KEY: 'sk-secret-value' } }));
    assert.equal(settings.policy.apiKeyEnv, 'POLICY_API_KEY');
    assert.ok(!JSON.stringify(settings).includes('sk-secret-value'));
  });
});
