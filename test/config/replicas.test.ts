import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { replicaOrder } from '../../src/core/replicaChoice.js';
import { replicasToPublish } from '../../src/core/training/replicaInTurn.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const BASE = [`scenarios.train=${FIXTURE_SCENARIOS}`, `scenarios.eval=${FIXTURE_SCENARIOS}`, 'training.lora.r=8'];

describe('policy.replicas', () => {
  it('POLICY_REPLICAS (name=url,name=url) is the list, and a run publishing to vLLM carries each with its queue', () => {
    const config = loadConfig({
      env: { POLICY_REPLICAS: 'a=http://10.0.0.1:8000/v1, b=http://10.0.0.2:8000/v1' },
      set: [...BASE, 'training.publish.mode=vllm', 'temporal.taskQueuePrefix=p-'],
    });
    assert.deepEqual(config.policy.replicas, [
      { name: 'a', baseURL: 'http://10.0.0.1:8000/v1' },
      { name: 'b', baseURL: 'http://10.0.0.2:8000/v1' },
    ]);
    const settings = trainingSettingsFromConfig(config, 'r');
    assert.deepEqual(settings.publish.replicas, [
      { name: 'a', baseURL: 'http://10.0.0.1:8000/v1', taskQueue: 'p-attune-publish-a' },
      { name: 'b', baseURL: 'http://10.0.0.2:8000/v1', taskQueue: 'p-attune-publish-b' },
    ]);
    assert.equal(settings.publish.policyBaseURL, 'http://10.0.0.1:8000/v1');
    assert.deepEqual(settings.rollout.policy.replicas, ['http://10.0.0.1:8000/v1', 'http://10.0.0.2:8000/v1']);
    // the replicas hold their adapters through their publishers, not the trainer's local path
    assert.equal(settings.rollout.policy.reloadFrom, undefined);
  });

  it('full fine-tuning on replicas: each replica reloads the weights through its publisher, and the calls check the version', () => {
    const settings = trainingSettingsFromConfig(
      loadConfig({
        env: { POLICY_REPLICAS: 'a=http://10.0.0.1:8000/v1,b=http://10.0.0.2:8000/v1' },
        set: [
          `scenarios.train=${FIXTURE_SCENARIOS}`,
          `scenarios.eval=${FIXTURE_SCENARIOS}`,
          'training.publish.mode=vllm',
        ],
      }),
      'r',
    );
    assert.equal(settings.publish.weights, 'full');
    assert.equal(settings.publish.replicas?.length, 2);
    assert.equal(settings.rollout.policy.weightVersion, 'r@0');
    assert.deepEqual(settings.rollout.policy.replicas, ['http://10.0.0.1:8000/v1', 'http://10.0.0.2:8000/v1']);
    // not from the trainer's local checkpoint path: the replica's own download, through its publisher
    assert.equal(settings.rollout.policy.reloadFrom, undefined);
  });

  it('absent, or with the trainer serving, nothing changes: no replicas in the run', () => {
    const single = trainingSettingsFromConfig(
      loadConfig({ env: {}, set: [...BASE, 'training.publish.mode=vllm'] }),
      'r',
    );
    assert.equal(single.publish.replicas, undefined);
    assert.equal(single.rollout.policy.replicas, undefined);
    assert.ok(single.rollout.policy.reloadFrom);
    const trainer = trainingSettingsFromConfig(
      loadConfig({ env: { POLICY_REPLICAS: 'a=http://10.0.0.1:8000/v1' }, set: BASE }),
      'r',
    );
    assert.equal(trainer.publish.replicas, undefined);
  });

  it('refuses a replica name used twice, naming the key', () => {
    assert.throws(
      () => loadConfig({ env: { POLICY_REPLICAS: 'a=http://h1/v1,a=http://h2/v1' }, set: BASE }),
      /policy\.replicas\.1\.name[\s\S]*used twice/,
    );
  });

  it('each call goes to the replica its seed picks, the others after it in ring order', () => {
    const endpoint = { baseURL: 'http://a/v1', replicas: ['http://a/v1', 'http://b/v1', 'http://c/v1'] };
    const firsts = new Set<string>();
    for (let seed = 0; seed < 60; seed++) {
      const order = replicaOrder(endpoint, seed);
      assert.deepEqual(order, replicaOrder(endpoint, seed), 'the same seed, the same order');
      assert.deepEqual([...order].sort(), [...endpoint.replicas].sort());
      const i = endpoint.replicas.indexOf(order[0]!);
      assert.deepEqual(
        order,
        [0, 1, 2].map((k) => endpoint.replicas[(i + k) % 3]),
      );
      firsts.add(order[0]!);
    }
    assert.equal(firsts.size, 3, 'the calls spread over every replica');
    assert.deepEqual(replicaOrder({ baseURL: 'http://a/v1' }, 5), ['http://a/v1']);
  });

  describe('training.publish.replicaUpdates', () => {
    const TWO = 'a=http://10.0.0.1:8000/v1,b=http://10.0.0.2:8000/v1';
    const FULL = [
      `scenarios.train=${FIXTURE_SCENARIOS}`,
      `scenarios.eval=${FIXTURE_SCENARIOS}`,
      'training.publish.mode=vllm',
      'training.publish.replicaUpdates=inTurn',
    ];
    const load = (replicas: string, set: string[]) => loadConfig({ env: { POLICY_REPLICAS: replicas }, set });

    it('inTurn: full weights with in-flight updates on two or more replicas; step k goes to replica k mod N, an ensure to all', () => {
      const settings = trainingSettingsFromConfig(load(TWO, [...FULL, 'training.maxStaleness=1']), 'r');
      assert.equal(settings.publish.replicaUpdates, 'inTurn');
      const names = (step: number, ensure = false) =>
        replicasToPublish(settings.publish.replicas!, step, settings.publish.replicaUpdates, ensure).map((r) => r.name);
      assert.deepEqual(
        [1, 2, 3, 4].map((k) => names(k)),
        [['b'], ['a'], ['b'], ['a']],
      );
      assert.deepEqual(names(0, true), ['a', 'b']);
      // the default, and runs started before the setting: every replica
      const every = trainingSettingsFromConfig(load(TWO, [...FULL.slice(0, 3), 'training.maxStaleness=1']), 'r');
      assert.equal(every.publish.replicaUpdates, undefined);
      assert.deepEqual(
        replicasToPublish(every.publish.replicas!, 3, every.publish.replicaUpdates, false).map((r) => r.name),
        ['a', 'b'],
      );
    });

    it('inTurn is refused, naming the field and why, with one replica, with LoRA, or with maxStaleness 0', () => {
      const refused = (replicas: string, set: string[], why: RegExp) =>
        assert.throws(
          () => load(replicas, set),
          (error: Error) => /training\.publish\.replicaUpdates/.test(error.message) && why.test(error.message),
        );
      refused('a=http://10.0.0.1:8000/v1', [...FULL, 'training.maxStaleness=1'], /two or more replicas/);
      refused(TWO, [...FULL, 'training.maxStaleness=1', 'training.lora.r=8'], /full weights/);
      refused(TWO, FULL, /maxStaleness 1 or more/);
    });
  });
});
