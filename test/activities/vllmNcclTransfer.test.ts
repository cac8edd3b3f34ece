import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { generatePolicyTurn } from '../../src/activities/policy.js';
import { SEND_TIMEOUT_S } from '../../src/trainer/weightTransfer.js';
import { createRunBookkeepingActivities } from '../../src/activities/runBookkeeping.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { FakeNcclMeeting } from '../support/fakeNcclMeeting.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { FAKE_UPDATE_INFO, FakeWeightTransferTrainer } from '../support/fakeWeightTransferTrainer.js';
import { testConfig } from '../support/rolloutRig.js';

const RENDEZVOUS = { address: '10.0.0.5', port: 29551, vllmWorkers: 1 };
const ROUTES_OF_A_FIRST_SEND = [
  '/is_paused',
  '/weight_info',
  '/shutdown_weight_transfer_engine',
  '/init_weight_transfer_engine',
  '/pause?mode=wait',
  '/update_weight_version',
  '/start_weight_update',
  '/update_weights',
  '/finish_weight_update',
  '/update_weight_version',
  '/resume',
  '/weight_info',
  '/is_paused',
];

describe("publishing full weights over NCCL (vLLM's native weight transfer), against a fake vLLM and a fake trainer", () => {
  let fake: FakeOpenAIServer;
  let trainer: FakeWeightTransferTrainer;
  const bookkeeping = createRunBookkeepingActivities(new FileArtifactStore(mkdtempSync(join(tmpdir(), 'a-'))));
  const publish = (version: string, pause?: 'keep') =>
    bookkeeping.publishPolicyVersion({
      ...(pause ? { pause } : {}),
      mode: 'vllm',
      policyBaseURL: `${fake.url}/`,
      apiKeyEnv: 'POLICY_API_KEY',
      version,
      exportPath: `/state/run/${version}`,
      weights: 'full',
      servedModel: 'fake-model',
      nccl: { trainer: { url: trainer.url, tokenEnv: 'ATTUNE_TRAINER_TOKEN' }, runName: 'run', rendezvous: RENDEZVOUS },
    });
  const routes = () => fake.fullWeights.calls.map((c) => c.route);

  beforeEach(async () => {
    fake = await FakeOpenAIServer.start();
    const meeting = new FakeNcclMeeting(1_500);
    fake.fullWeights.meeting = meeting;
    trainer = await FakeWeightTransferTrainer.start(meeting, () => ({
      version: fake.fullWeights.version,
      paused: fake.fullWeights.paused,
    }));
  });
  afterEach(async () => {
    await Promise.all([fake.fullWeights.settled(), trainer.settled()]);
    await trainer.close();
    await fake.close();
  });

  it("makes the group once, with the trainer's join at the same time; per step pauses, labels the weights as loading, starts, updates while the trainer broadcasts, finishes, labels them with the version, resumes", async () => {
    const published = await publish('run@1');
    assert.equal(published.version, 'run@1');
    assert.ok(published.firstTokenAtMs !== null);
    assert.deepEqual(routes(), ROUTES_OF_A_FIRST_SEND);
    const init = fake.fullWeights.calls.find((c) => c.route === '/init_weight_transfer_engine');
    assert.deepEqual(init?.body, {
      init_info: { master_address: '10.0.0.5', master_port: 29551, world_size: 2, rank_offset: 1, packed: true },
    });
    assert.deepEqual(
      trainer.calls.map((c) => [c.call, c.body]),
      [
        ['group', { master_address: '10.0.0.5', master_port: 29551, world_size: 2 }],
        ['info', null],
        // bounded by the publish's deadline, and within the call's own (600 s)
        ['send', { timeout_seconds: SEND_TIMEOUT_S }],
      ],
    );
    assert.ok(SEND_TIMEOUT_S > 0 && SEND_TIMEOUT_S < 600);
    assert.deepEqual(fake.fullWeights.received, [FAKE_UPDATE_INFO], "vLLM is told the trainer's tensors");
    assert.deepEqual(trainer.sentSteps, [1]);
    assert.equal(fake.fullWeights.version, 'run@1');
    assert.equal(fake.fullWeights.paused, false);

    fake.fullWeights.calls.length = 0;
    trainer.calls.length = 0;
    await publish('run@2');
    assert.deepEqual(
      routes(),
      ROUTES_OF_A_FIRST_SEND.filter((r) => !r.includes('weight_transfer_engine')),
      'the group is made once per vLLM start, not per step',
    );
    assert.deepEqual(
      trainer.calls.map((c) => c.call),
      ['info', 'send'],
    );
    assert.deepEqual(trainer.sentSteps, [1, 2]);
  });

  it('the label is never the new version while the weights are half sent: vLLM is paused and reads `loading <version>` from the start of the update to its finish, the broadcast included', async () => {
    await publish('run@1');
    const during = fake.fullWeights.calls.filter((c) =>
      ['/start_weight_update', '/update_weights', '/finish_weight_update'].includes(c.route),
    );
    assert.equal(during.length, 3);
    for (const c of during) assert.deepEqual([c.route, c.version, c.paused], [c.route, 'loading run@1', true]);
    const send = trainer.calls.find((c) => c.call === 'send');
    assert.deepEqual(send?.vllm, { version: 'loading run@1', paused: true });
  });

  const vllmStages = [
    '/shutdown_weight_transfer_engine',
    '/init_weight_transfer_engine',
    '/pause',
    '/start_weight_update',
    '/update_weights',
    '/finish_weight_update',
  ];
  for (const stage of vllmStages)
    it(`vLLM refusing ${stage} fails the publish for good with vLLM's message; vLLM is left resumed, its weights not labelled with the new version, and the next publish makes the group again`, async () => {
      fake.fullWeights.version = 'run@0';
      fake.fullWeights.refuse.set(stage, `ValueError: refused at ${stage} by the worker`);
      await assert.rejects(publish('run@1'), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure, String(error));
        assert.equal(error.type, 'PublishRefused');
        assert.equal(error.nonRetryable, true);
        assert.ok(
          error.message.includes(`${stage}: HTTP 500: ValueError: refused at ${stage} by the worker`),
          error.message,
        );
        assert.ok(error.message.includes("sending version run@1 over NCCL from the trainer's rank 0"), error.message);
        return true;
      });
      await Promise.all([fake.fullWeights.settled(), trainer.settled()]);
      assert.equal(fake.fullWeights.paused, false, 'resumed');
      assert.notEqual(fake.fullWeights.version, 'run@1');
      assert.equal(
        routes().includes('/resume'),
        stage !== '/shutdown_weight_transfer_engine' && stage !== '/init_weight_transfer_engine' && stage !== '/pause',
      );

      fake.fullWeights.calls.length = 0;
      if (stage === '/finish_weight_update') {
        // vLLM keeps a session whose finish raised open: it refuses to drop the group until restarted,
        // and the run waits for the operator with that message
        await assert.rejects(publish('run@1'), /Cannot release a trainer connection during a weight update/);
        fake.fullWeights.restart();
        fake.fullWeights.calls.length = 0;
      }
      await publish('run@1');
      assert.deepEqual(routes(), ROUTES_OF_A_FIRST_SEND);
      assert.equal(fake.fullWeights.version, 'run@1');
    });

  const trainerStages: { call: 'group' | 'info' | 'send'; status: number; type: string }[] = [
    { call: 'group', status: 501, type: 'PublishRefused' },
    { call: 'info', status: 404, type: 'PublishRefused' },
    { call: 'send', status: 501, type: 'PublishRefused' },
    { call: 'send', status: 409, type: 'PublishFailed' },
  ];
  for (const { call, status, type } of trainerStages)
    it(`the trainer answering ${status} to its ${call} call fails the publish as ${type} with the trainer's message; vLLM is left resumed and unlabelled`, async () => {
      fake.fullWeights.version = 'run@0';
      trainer.refuse.set(call, { status, message: `trainer says no to ${call}` });
      await assert.rejects(publish('run@1'), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure, String(error));
        assert.equal(error.type, type);
        assert.equal(error.nonRetryable, type === 'PublishRefused');
        assert.ok(error.message.includes(`HTTP ${status}: trainer says no to ${call}`), error.message);
        return true;
      });
      await fake.fullWeights.settled();
      assert.equal(fake.fullWeights.paused, false);
      assert.notEqual(fake.fullWeights.version, 'run@1');
    });

  it('a restarted vLLM (its group forgotten, back on its launch weights) gets the group made again before the next update', async () => {
    await publish('run@1');
    fake.fullWeights.restart();
    fake.fullWeights.calls.length = 0;
    await publish('run@2');
    assert.deepEqual(routes(), ROUTES_OF_A_FIRST_SEND);
    assert.deepEqual(
      trainer.calls.slice(-3).map((c) => c.call),
      ['group', 'info', 'send'],
    );
    assert.equal(fake.fullWeights.version, 'run@2');
  });

  it('a restarted trainer (rank 0 in no group) fails the send to be retried, and the retry makes the group again', async () => {
    await publish('run@1');
    trainer.restart();
    await assert.rejects(
      publish('run@2'),
      (error: unknown) => error instanceof ApplicationFailure && error.type === 'PublishFailed' && !error.nonRetryable,
    );
    await fake.fullWeights.settled();
    fake.fullWeights.calls.length = 0;
    await publish('run@2');
    assert.ok(routes().includes('/init_weight_transfer_engine'));
    assert.equal(fake.fullWeights.version, 'run@2');
  });

  it('a send past its deadline (a vLLM worker died mid-transfer: the trainer answers 504 and leaves the group) fails the publish to be retried, and the retry makes the group again', async () => {
    await publish('run@1');
    const timedOut =
      'the broadcast of run@2 did not finish within 570 s: a vLLM worker stopped receiving (it died or hangs)';
    trainer.refuse.set('send', { status: 504, message: timedOut });
    await assert.rejects(publish('run@2'), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, 'PublishFailed');
      assert.equal(error.nonRetryable, false);
      assert.ok(error.message.includes(`HTTP 504: ${timedOut}`), error.message);
      return true;
    });
    trainer.restart(); // rank 0 tore its side down at the deadline
    await Promise.all([fake.fullWeights.settled(), trainer.settled()]);
    assert.equal(fake.fullWeights.paused, false, 'resumed');
    fake.fullWeights.calls.length = 0;
    await publish('run@2');
    assert.deepEqual(routes(), ROUTES_OF_A_FIRST_SEND, 'the group made again before the send');
    assert.deepEqual(trainer.sentSteps, [1, 2]);
    assert.equal(fake.fullWeights.version, 'run@2');
  });

  it('a policy call that finds vLLM restarted has the trainer send the version it samples over NCCL first, in a group made again', async () => {
    await publish('run@1');
    fake.fullWeights.restart();
    const endpoint = {
      ...rolloutSettingsFromConfig(testConfig(fake.url)).policy,
      weightVersion: 'run@1',
      reloadFrom: { runName: 'run', trainerUrl: trainer.url, tokenEnv: 'ATTUNE_TRAINER_TOKEN', nccl: RENDEZVOUS },
    };
    const turn = await generatePolicyTurn({
      endpoint,
      messages: [{ role: 'user', content: 'hi' }],
      think: false,
      seed: 1,
    });
    assert.equal(turn.weightVersion, 'run@1');
    assert.deepEqual(trainer.sentSteps, [1, 1]);
    assert.equal(trainer.calls.filter((c) => c.call === 'group').length, 2);
  });

  describe('in-flight updates (maxStaleness >= 1)', () => {
    const endpoint = (oldest: string) => ({
      ...rolloutSettingsFromConfig(testConfig(fake.url)).policy,
      weightVersion: oldest,
      acceptNewerWeights: true as const,
      reloadFrom: { runName: 'run', trainerUrl: trainer.url, tokenEnv: 'ATTUNE_TRAINER_TOKEN', nccl: RENDEZVOUS },
    });
    const say = (oldest: string) =>
      generatePolicyTurn({
        endpoint: endpoint(oldest),
        messages: [{ role: 'user', content: 'hi' }],
        think: false,
        seed: 1,
      });

    it('the publish freezes the calls in flight (pause keep) and drops the old weights’ prefix cache after the broadcast, before the label', async () => {
      await publish('run@1', 'keep');
      assert.deepEqual(
        routes(),
        ROUTES_OF_A_FIRST_SEND.map((r) => (r === '/pause?mode=wait' ? '/pause?mode=keep' : r)).flatMap((r, i, all) =>
          r === '/finish_weight_update' && all[i + 1] === '/update_weight_version'
            ? [r, '/reset_prefix_cache?reset_running_requests=true']
            : [r],
        ),
      );
      assert.deepEqual(fake.fullWeights.prefixResets, ['loading run@1']);
    });

    it('a call frozen across an NCCL publish is asked again, and records the version sent; a call on a newer version takes it as it is', async () => {
      await publish('run@1', 'keep');
      fake.inject('policy', 1, 'hold');
      const call = say('run@1');
      await fake.waitForCall('policy', 1);
      fake.fullWeights.afterPause = () => fake.release();
      await publish('run@2', 'keep');
      assert.equal((await call).weightVersion, 'run@2');
      assert.deepEqual(
        fake.calls.filter((c) => c.role === 'policy').map((c) => c.weights),
        [['run@1', 'run@2'], ['run@2']],
      );
      const sent = trainer.sentSteps.length;
      assert.equal((await say('run@1')).weightVersion, 'run@2');
      assert.equal(trainer.sentSteps.length, sent, 'nothing sent for a call a newer version serves');
    });

    it('a call that finds vLLM restarted has the trainer send the oldest version it takes over NCCL, with a keep pause', async () => {
      await publish('run@2', 'keep');
      fake.fullWeights.restart();
      fake.fullWeights.calls.length = 0;
      assert.equal((await say('run@1')).weightVersion, 'run@1');
      assert.deepEqual(trainer.sentSteps, [2, 1]);
      assert.ok(routes().includes('/pause?mode=keep'));
    });
  });
});
