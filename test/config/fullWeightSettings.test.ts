import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { stepRolloutSettings } from '../../src/core/training/stepPlan.js';
import { publishInputOf } from '../../src/workflows/publishInput.js';
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

describe('full weights with in-flight updates (training.maxStaleness >= 1)', () => {
  for (const transport of ['checkpoint', 'nccl'] as const) {
    it(`the config takes them (${transport}): rollouts take newer versions, the publish freezes calls in flight (pause keep), the trainer keeps maxStaleness + 1 exports; evaluations and maxStaleness 0 ask for one version and drain`, () => {
      const nccl =
        transport === 'nccl'
          ? [
              'training.publish.transport=nccl',
              'training.publish.nccl.address=10.0.0.5',
              'training.publish.nccl.port=29551',
            ]
          : [];
      const config = loadConfig({ env: {}, set: [...BASE, ...nccl, 'training.maxStaleness=1'] });
      const settings = trainingSettingsFromConfig(config, 'run');
      assert.equal(settings.maxStaleness, 1);
      assert.equal(settings.rollout.policy.acceptNewerWeights, true);
      assert.equal(settings.rollout.policy.weightVersion, 'run@0');
      assert.equal(
        settings.evalSettings?.policy.acceptNewerWeights,
        undefined,
        'an evaluation samples its version exactly',
      );
      assert.equal(stepRolloutSettings(settings.rollout, 'run@2', undefined).policy.acceptNewerWeights, true);
      assert.equal(publishInputOf(settings, 'run@3', '/state/run/step-3').pause, 'keep');
      assert.equal(settings.trainer.hyperparameters.export_keep, 2, 'the exports rollouts may still sample are kept');

      const synchronous = trainingSettingsFromConfig(loadConfig({ env: {}, set: [...BASE, ...nccl] }), 'run');
      assert.equal(synchronous.rollout.policy.acceptNewerWeights, undefined);
      assert.equal(publishInputOf(synchronous, 'run@3', '/state/run/step-3').pause, undefined);
    });
  }

  it('still needs the checkpoints its rollouts sample kept', () => {
    assert.throws(
      () =>
        loadConfig({
          env: {},
          set: [...BASE, 'training.maxStaleness=1', 'training.hyperparameters.keep_checkpoints=1'],
        }),
      /keep at least 2/,
    );
  });
});

describe('training.publish.transport: nccl (full weights sent by the trainer over NCCL)', () => {
  const NCCL = [
    ...BASE,
    'training.publish.transport=nccl',
    'training.publish.nccl.address=10.0.0.5',
    'training.publish.nccl.port=29551',
  ];
  const refusal = (set: string[]): string => {
    try {
      loadConfig({ env: {}, set });
    } catch (error) {
      return String(error);
    }
    assert.fail('the config was accepted');
  };

  it('reaches the publish and the policy calls (which send a lost version again the same way); the default is the checkpoint reload', () => {
    const settings = trainingSettingsFromConfig(loadConfig({ env: {}, set: NCCL }), 'run');
    const group = { address: '10.0.0.5', port: 29551, vllmWorkers: 1 };
    assert.equal(settings.publish.transport, 'nccl');
    assert.deepEqual(settings.publish.nccl, group);
    assert.deepEqual(settings.rollout.policy.reloadFrom?.nccl, group);
    assert.deepEqual(publishInputOf(settings, 'run@3', '/state/run/step-3').nccl, {
      trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
      runName: 'run',
      rendezvous: group,
    });
    const byDefault = trainingSettingsFromConfig(loadConfig({ env: {}, set: BASE }), 'run');
    assert.equal(loadConfig({ env: {}, set: BASE }).training.publish.transport, 'checkpoint');
    assert.equal(byDefault.publish.transport, undefined, 'the workflow input of a checkpoint run is as before');
    assert.equal(byDefault.rollout.policy.reloadFrom?.nccl, undefined);
    const reload = publishInputOf(byDefault, 'run@3', '/state/run/step-3');
    assert.equal(reload.nccl, undefined, 'the step is reloaded from its export');
    assert.deepEqual([reload.weights, reload.exportPath], ['full', '/state/run/step-3']);
  });

  it('is refused with LoRA, saying what NCCL needs', () => {
    const message = refusal([...NCCL, 'training.lora.r=8']);
    assert.match(message, /training\.publish\.transport: nccl sends full weights, and this run trains a LoRA adapter/);
    assert.match(message, /VLLM_SERVER_DEV_MODE=1 and --weight-transfer-config '\{"backend": "nccl"\}'/);
    assert.match(message, /on a CUDA GPU/);
  });

  it('is refused without vLLM publishing, and without the rendezvous', () => {
    assert.match(
      refusal([...NCCL, 'training.publish.mode=trainer']),
      /nccl sends full weights into vLLM: set training\.publish\.mode: vllm/,
    );
    assert.match(
      refusal([...BASE, 'training.publish.transport=nccl']),
      /training\.publish\.nccl: transport: nccl needs training\.publish\.nccl\.address and \.port/,
    );
  });

  it('is refused on replicas, where each publisher reloads from the trainer', () => {
    assert.match(
      refusal([...NCCL, 'policy.replicas=a=http://127.0.0.1:8001/v1,b=http://127.0.0.1:8002/v1']),
      /training\.publish\.transport: nccl sends the trainer's weights to one vLLM .*use transport: checkpoint, or drop policy\.replicas/,
    );
  });
});
