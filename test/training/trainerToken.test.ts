import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { chatCompletion } from '../../src/activities/chatCompletion.js';
import { createRunBookkeepingActivities } from '../../src/activities/runBookkeeping.js';
import { trainerRequest } from '../../src/trainer/trainerClient.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { ensureLocalTrainer } from '../../src/cli/localTrainer.js';
import { buildEvaluationInput } from '../../src/client/evaluations.js';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { createLogger } from '../../src/log.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { TrainerProcess } from '../support/trainerProcess.js';

const TOKEN = 'trainer-token-for-tests-0123456789';
const SECRETS = ['TRAINER_TOKEN', 'POLICY_API_KEY'] as const;

/** The secrets as this file found them: every restore goes back to these, however calls nest. */
const ORIGINAL = SECRETS.map((name) => [name, process.env[name]] as const);

/** Sets the orchestrator's secrets for one test; the returned function puts the original values back. */
function withSecrets(values: Partial<Record<(typeof SECRETS)[number], string>>): () => void {
  const saved = ORIGINAL;
  for (const name of SECRETS) {
    if (values[name] === undefined) delete process.env[name];
    else process.env[name] = values[name];
  }
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

describe('a trainer started with a token (TRAINER_TOKEN), end to end', function () {
  this.timeout(300_000);
  let trainer: TrainerProcess;
  let restore: () => void = () => {};
  const configFor = (url: string) =>
    loadConfig({
      env: {},
      set: [
        `home=${mkdtempSync(join(tmpdir(), 'attune-token-'))}`,
        `trainer.url=${url}`,
        'training.publish.mode=trainer',
        'policy.maxTokens=4',
        `scenarios.train=${FIXTURE_SCENARIOS}`,
        `scenarios.eval=${FIXTURE_SCENARIOS}`,
      ],
    });

  before(async () => {
    trainer = await TrainerProcess.start(mkdtempSync(join(tmpdir(), 'attune-trainer-')), { TRAINER_TOKEN: TOKEN });
    restore = withSecrets({ TRAINER_TOKEN: TOKEN });
    await trainerRequest({ url: trainer.url, tokenEnv: 'TRAINER_TOKEN' }, 'POST', '/v1/runs', {
      run_id: 'tok',
      base_model: 'tiny-random',
      algorithm: 'grpo',
      seed: 1,
    });
    restore();
  });
  after(async () => {
    restore();
    await trainer?.kill();
  });

  it('samples and publishes trainer-served versions with trainer.tokenEnv, not the policy key', async () => {
    restore = withSecrets({ TRAINER_TOKEN: TOKEN, POLICY_API_KEY: 'a-vllm-key-the-trainer-must-not-get' });
    const config = configFor(trainer.url);
    const settings = trainingSettingsFromConfig(config, 'tok');
    assert.equal(settings.rollout.policy.apiKeyEnv, 'TRAINER_TOKEN');
    assert.equal(settings.evalSettings?.policy.apiKeyEnv ?? 'TRAINER_TOKEN', 'TRAINER_TOKEN');
    const reply = await chatCompletion({
      endpoint: settings.rollout.policy,
      role: 'policy',
      messages: [{ role: 'user', content: 'I feel low today' }],
      seed: 1,
    });
    assert.equal(typeof reply.content, 'string');
    const bookkeeping = createRunBookkeepingActivities(new FileArtifactStore(join(config.home, 'artifacts')));
    const published = await bookkeeping.publishPolicyVersion({
      mode: settings.publish.mode,
      policyBaseURL: settings.publish.policyBaseURL,
      apiKeyEnv: settings.rollout.policy.apiKeyEnv,
      version: 'tok@0',
      exportPath: null,
    });
    assert.equal(published.version, 'tok@0');
    assert.equal(published.firstTokenAtMs, null, 'the trainer serves what it committed: nothing to time');
    // an evaluation of a trainer-served version reaches the trainer the same way
    const evaluation = buildEvaluationInput(config, { split: 'eval', policy: 'tok@0' });
    assert.equal(evaluation.settings.policy.apiKeyEnv, 'TRAINER_TOKEN');
    await chatCompletion({
      endpoint: evaluation.settings.policy,
      role: 'policy',
      messages: [{ role: 'user', content: 'hello' }],
    });
    // a policy server of its own (vLLM) keeps its own key
    const vllm = trainingSettingsFromConfig(
      loadConfig({
        env: {},
        set: [
          `trainer.url=${trainer.url}`,
          'training.publish.mode=vllm',
          'training.lora.r=8',
          'policy.baseURL=http://vllm-host:8000/v1',
          `scenarios.train=${FIXTURE_SCENARIOS}`,
        ],
      }),
      'tok',
    );
    assert.equal(vllm.rollout.policy.apiKeyEnv, 'POLICY_API_KEY');
  });

  it('fails fast, naming the variable, when the token is wrong', async () => {
    restore = withSecrets({ TRAINER_TOKEN: 'not-the-token' });
    const settings = trainingSettingsFromConfig(configFor(trainer.url), 'tok');
    const bookkeeping = createRunBookkeepingActivities(new FileArtifactStore(mkdtempSync(join(tmpdir(), 'a-'))));
    await assert.rejects(
      bookkeeping.publishPolicyVersion({
        mode: 'trainer',
        policyBaseURL: settings.publish.policyBaseURL,
        apiKeyEnv: settings.rollout.policy.apiKeyEnv,
        version: 'tok@0',
        exportPath: null,
      }),
      (error: unknown) =>
        error instanceof ApplicationFailure && error.nonRetryable && /\$TRAINER_TOKEN.*401/.test(error.message),
    );
    await assert.rejects(
      chatCompletion({ endpoint: settings.rollout.policy, role: 'policy', messages: [{ role: 'user', content: 'x' }] }),
      (error: unknown) => error instanceof ApplicationFailure && /HTTP 401 \(check TRAINER_TOKEN\)/.test(error.message),
    );
  });

  it("the CLI's health check finds the running trainer, and checks the token", async () => {
    const log = createLogger({}, 'error');
    restore = withSecrets({ TRAINER_TOKEN: TOKEN });
    const attached = await ensureLocalTrainer(configFor(trainer.url), log);
    assert.equal(attached.url, null, 'attached to the running trainer instead of starting another');
    restore();
    restore = withSecrets({ TRAINER_TOKEN: 'not-the-token' });
    await assert.rejects(ensureLocalTrainer(configFor(trainer.url), log), /refuses the token in \$TRAINER_TOKEN/);
    restore();
    restore = withSecrets({});
    await assert.rejects(ensureLocalTrainer(configFor(trainer.url), log), /set \$TRAINER_TOKEN/);
  });
});

describe('training against a trainer with a token (real dev server, real trainer)', function () {
  this.timeout(120_000); // about 15 s; a refused token fails rollouts, and the run then only waits
  let rig: TrainingRig | undefined;
  let restore: () => void = () => {};
  afterEach(async () => {
    restore();
    await rig?.close();
    rig = undefined;
  });

  it('runs a step: rollouts sample the trainer-served policy and the version is published', async () => {
    restore = withSecrets({ TRAINER_TOKEN: TOKEN, POLICY_API_KEY: 'a-vllm-key-the-trainer-must-not-get' });
    rig = await createTrainingRig({ set: TINY_TRAINING('grpo', 1), trainerEnv: { TRAINER_TOKEN: TOKEN } });
    await rig.startWorkers();
    const { handle } = await rig.start('tok-e2e');
    const result = await handle.result();
    assert.equal(result.stepsApplied, 1);
    assert.equal(result.version, 'tok-e2e@1');
    assert.equal((await rig.trainer.runState('tok-e2e')).step, 1);
    const [metrics] = await rig.metrics('tok-e2e');
    assert.equal(metrics?.rollouts.failed, 0);
  });
});
