import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { generatePolicyTurn } from '../../src/activities/policy.js';
import { createRunBookkeepingActivities } from '../../src/activities/runBookkeeping.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { replicaOrder } from '../../src/core/replicaChoice.js';
import { reloadFullWeights } from '../../src/vllm/fullWeights.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { eventually } from '../support/eventually.js';
import { testConfig } from '../support/rolloutRig.js';

/** Just the trainer's routes a reload reads: the run's checkpoints (step 0, the base) and each step's export. */
async function fakeTrainerExports(runName: string, base: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    const run = `/v1/runs/${runName}`;
    const step = new RegExp(`^${run}/steps/(\\d+)$`).exec(req.url ?? '');
    if (req.url === run)
      res.end(JSON.stringify({ run_id: runName, step: 1, checkpoints: [{ step: 0, export_path: base }] }));
    else if (step)
      res.end(
        JSON.stringify({ step: Number(step[1]), checkpoint: { export_path: `/state/${runName}/step-${step[1]}` } }),
      );
    else {
      res.statusCode = 404;
      res.end(JSON.stringify({ error: { message: 'not found' } }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('publishing full weights to vLLM (reload in place, weight versions), against the fake vLLM', () => {
  let fake: FakeOpenAIServer;
  const bookkeeping = createRunBookkeepingActivities(new FileArtifactStore(mkdtempSync(join(tmpdir(), 'a-'))));
  const publish = (version: string, exportPath: string, pause?: 'keep') =>
    bookkeeping.publishPolicyVersion({
      mode: 'vllm',
      policyBaseURL: `${fake.url}/`,
      apiKeyEnv: 'POLICY_API_KEY',
      version,
      exportPath,
      weights: 'full',
      servedModel: 'fake-model',
      ...(pause ? { pause } : {}),
    });

  beforeEach(async () => {
    fake = await FakeOpenAIServer.start();
  });
  afterEach(() => fake.close());

  it('pauses, labels the weights as loading, reloads the directory, labels them with the version, resumes; then times the served model', async () => {
    const before = Date.now();
    const published = await publish('run@1', '/state/run/step-1');
    assert.equal(published.version, 'run@1');
    assert.ok(published.firstTokenAtMs !== null && published.firstTokenAtMs >= before);
    // The reload alone (pause to resume), a part of the publish's latency (bench:publish reports both).
    const { loadMs, publishMs } = published;
    assert.ok(
      typeof loadMs === 'number' && typeof publishMs === 'number' && loadMs >= 0 && loadMs <= publishMs,
      `loadMs ${loadMs}, publishMs ${publishMs}`,
    );
    assert.deepEqual(fake.probes, ['fake-model']);
    assert.deepEqual(
      fake.fullWeights.calls.map((c) => [c.route, c.paused]),
      [
        ['/is_paused', false],
        ['/pause?mode=wait', false],
        ['/update_weight_version', true],
        ['/collective_rpc', true],
        ['/update_weight_version', true],
        ['/resume', true],
        ['/weight_info', false],
        ['/is_paused', false],
      ],
    );
    assert.deepEqual(fake.fullWeights.calls[2]!.body, { new_version: 'loading run@1' });
    assert.deepEqual(fake.fullWeights.calls[3]!.body, {
      method: 'reload_weights',
      kwargs: { weights_path: '/state/run/step-1' },
    });
    assert.equal(fake.fullWeights.version, 'run@1');
    assert.equal(fake.fullWeights.weightsPath, '/state/run/step-1');
  });

  it('in-flight updates (pause keep): pauses with mode=keep, and drops the prefix cache the old weights computed before labelling the new version', async () => {
    fake.fullWeights.version = 'run@1';
    await publish('run@2', '/state/run/step-2', 'keep');
    assert.deepEqual(
      fake.fullWeights.calls.map((c) => [c.route, c.version, c.paused]),
      [
        ['/is_paused', 'run@1', false],
        ['/pause?mode=keep', 'run@1', false],
        ['/update_weight_version', 'run@1', true],
        ['/collective_rpc', 'loading run@2', true],
        ['/reset_prefix_cache?reset_running_requests=true', 'loading run@2', true],
        ['/update_weight_version', 'loading run@2', true],
        ['/resume', 'run@2', true],
        ['/weight_info', 'run@2', false],
        ['/is_paused', 'run@2', false],
      ],
    );
    assert.deepEqual(fake.fullWeights.prefixResets, ['loading run@2']);
  });

  it("a reload vLLM refuses fails for good with vLLM's message; vLLM is resumed and its weights carry no version a rollout expects", async () => {
    fake.fullWeights.version = 'run@1';
    fake.fullWeights.failReloads.push('FileNotFoundError: No safetensors found in /state/run/step-2');
    await assert.rejects(publish('run@2', '/state/run/step-2'), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, 'PublishRefused');
      assert.equal(error.nonRetryable, true);
      assert.ok(error.message.includes(`${fake.url.replace(/\/v1$/, '')}/collective_rpc: HTTP 500`), error.message);
      assert.ok(error.message.includes('reloading version run@2 from /state/run/step-2'), error.message);
      assert.match(error.message, /No safetensors found in \/state\/run\/step-2/);
      return true;
    });
    assert.equal(fake.fullWeights.paused, false, 'resumed after the failed reload');
    assert.equal(fake.fullWeights.version, 'loading run@2');
  });

  describe('a /resume that fails (vLLM left paused: every later call would wait for its HTTP timeout)', () => {
    /** The log lines `run` writes (the publish's warnings go to stderr). */
    async function logOf<T>(run: () => Promise<T>): Promise<{ value: T | undefined; error: unknown; log: string }> {
      const write = process.stderr.write;
      let log = '';
      process.stderr.write = ((chunk: string | Uint8Array) => {
        log += String(chunk);
        return true;
      }) as typeof process.stderr.write;
      try {
        return { value: await run(), error: undefined, log };
      } catch (error) {
        return { value: undefined, error, log };
      } finally {
        process.stderr.write = write;
      }
    }
    const routes = () => fake.fullWeights.calls.map((c) => [c.route, c.paused]);

    it('failing once, is tried again: the publish ends with vLLM resumed', async () => {
      fake.fullWeights.failResumes = 1;
      const { error, log } = await logOf(() => publish('run@1', '/state/run/step-1'));
      assert.equal(error, undefined);
      assert.equal(fake.fullWeights.paused, false);
      assert.equal(fake.fullWeights.version, 'run@1');
      assert.deepEqual(routes().slice(-4), [
        ['/resume', true],
        ['/resume', true],
        ['/weight_info', false],
        ['/is_paused', false],
      ]);
      assert.match(log, /vLLM \/resume failed; trying again/);
    });

    it('failing every time, fails the publish to be retried (never reported done while vLLM is paused); the next publish resumes vLLM first', async () => {
      fake.fullWeights.failResumes = 3;
      const failed = await logOf(() => publish('run@1', '/state/run/step-1'));
      assert.ok(failed.error instanceof ApplicationFailure, String(failed.error));
      assert.equal(failed.error.type, 'PublishFailed');
      assert.equal(failed.error.nonRetryable, false);
      assert.match(failed.error.message, /is still paused after the publish \(.*Failed to resume generation/);
      assert.equal(fake.fullWeights.paused, true, 'the fault: vLLM is left paused, though it labels run@1');
      assert.equal(fake.fullWeights.version, 'run@1');

      fake.fullWeights.calls.length = 0;
      const next = await logOf(() => publish('run@1', '/state/run/step-1'));
      assert.equal(next.error, undefined);
      assert.deepEqual(routes().slice(0, 4), [
        ['/is_paused', true],
        ['/weight_info', true],
        ['/resume', true],
        ['/pause?mode=wait', false],
      ]);
      assert.equal(fake.fullWeights.paused, false);
      assert.match(next.log, /vLLM found paused \(a publish left it so\); resuming it/);
    });

    it("a step's check (the version served already: nothing reloaded) resumes a vLLM left paused, and says so", async () => {
      fake.fullWeights.version = 'run@1';
      fake.fullWeights.paused = true;
      const server = { base: fake.url, headers: {}, apiKeyEnv: 'POLICY_API_KEY' };
      const { value, error, log } = await logOf(() =>
        reloadFullWeights(server, 'run@1', '/state/run/step-1', { unlessServed: true }),
      );
      assert.equal(error, undefined);
      assert.deepEqual(value, { reloadMs: 0 });
      assert.deepEqual(routes(), [
        ['/is_paused', true],
        ['/weight_info', true],
        ['/resume', true],
        ['/weight_info', false],
      ]);
      assert.equal(fake.fullWeights.paused, false);
      assert.equal(fake.fullWeights.weightsPath, null, 'nothing reloaded');
      assert.match(log, /vLLM found paused \(a publish left it so\); resuming it/);
    });

    it('a vLLM paused half-way through a load (labelled `loading …`) is left to the publish that follows, which resumes it once loaded', async () => {
      fake.fullWeights.version = 'loading run@1';
      fake.fullWeights.paused = true;
      const { error } = await logOf(() => publish('run@1', '/state/run/step-1'));
      assert.equal(error, undefined);
      assert.deepEqual(routes().slice(0, 3), [
        ['/is_paused', true],
        ['/weight_info', true],
        ['/pause?mode=wait', true],
      ]);
      assert.equal(fake.fullWeights.paused, false);
      assert.equal(fake.fullWeights.version, 'run@1');
    });
  });

  it('a vLLM without dev mode (404 on the RL routes) is refused, saying how to start it', async () => {
    fake.fullWeights.devMode = false;
    await assert.rejects(
      publish('run@1', '/state/run/step-1'),
      (error: unknown) =>
        error instanceof ApplicationFailure &&
        error.type === 'PublishRefused' &&
        error.nonRetryable === true &&
        /\/is_paused: HTTP 404 \(start vLLM 0\.32 with VLLM_SERVER_DEV_MODE=1/.test(error.message),
    );
  });

  describe('a policy call of a full-weight run', () => {
    let trainer: { url: string; server: Server };
    beforeEach(async () => {
      trainer = await fakeTrainerExports('run', '/models/base');
    });
    afterEach(() => new Promise<void>((resolve) => trainer.server.close(() => resolve())));

    const endpointAt = (version: string) => ({
      ...rolloutSettingsFromConfig(testConfig(fake.url)).policy,
      weightVersion: version,
      reloadFrom: { runName: 'run', trainerUrl: trainer.url, tokenEnv: 'ATTUNE_TRAINER_TOKEN' },
    });
    const turn = (version: string) =>
      generatePolicyTurn({
        endpoint: endpointAt(version),
        messages: [{ role: 'user', content: 'hi' }],
        think: false,
        seed: 1,
      });

    it('records the weight version that served it; vLLM serving it already, nothing is reloaded', async () => {
      fake.fullWeights.version = 'run@1';
      const result = await turn('run@1');
      assert.equal(result.weightVersion, 'run@1');
      assert.deepEqual(
        fake.fullWeights.calls.map((c) => c.route),
        ['/weight_info', '/weight_info'],
      );
    });

    it('a vLLM restarted on its launch weights is reloaded with the expected version first (step 0: the base model)', async () => {
      fake.fullWeights.version = 'run@1';
      fake.fullWeights.restart();
      assert.equal((await turn('run@1')).weightVersion, 'run@1');
      assert.equal(fake.fullWeights.weightsPath, '/state/run/step-1');
      fake.fullWeights.restart();
      assert.equal((await turn('run@0')).weightVersion, 'run@0');
      assert.equal(fake.fullWeights.weightsPath, '/models/base');
      assert.equal(fake.fullWeights.version, 'run@0');
    });

    it('a vLLM that does not answer (killed, not yet restarted) fails the call as an endpoint out of reach: LlmUnreachable, retried, which a rollout waits at', async () => {
      const url = fake.url;
      const endpoint = endpointAt('run@1');
      await fake.close();
      await assert.rejects(
        generatePolicyTurn({ endpoint, messages: [{ role: 'user', content: 'hi' }], think: false, seed: 1 }),
        (error: unknown) =>
          error instanceof ApplicationFailure &&
          error.type === 'LlmUnreachable' &&
          !error.nonRetryable &&
          error.message.startsWith(`vLLM ${url.replace(/\/v1$/, '')}/weight_info: unreachable: `),
      );
      fake = await FakeOpenAIServer.start();
    });

    describe('on replicas (no reloadFrom: the publisher beside each vLLM reloads it)', () => {
      const onReplicas = (replicas?: string[]) => ({
        ...rolloutSettingsFromConfig(testConfig(fake.url)).policy,
        weightVersion: 'run@1',
        ...(replicas ? { replicas } : {}),
      });
      const say = (endpoint: ReturnType<typeof onReplicas>) =>
        generatePolicyTurn({ endpoint, messages: [{ role: 'user', content: 'hi' }], think: false, seed: 1 });

      it('the only replica, found on its launch weights, is waited for until its publisher has reloaded it; the call then goes on', async () => {
        fake.fullWeights.version = 'default';
        const started = Date.now();
        const reloaded = setTimeout(() => (fake.fullWeights.version = 'run@1'), 800);
        try {
          assert.equal((await say(onReplicas())).weightVersion, 'run@1');
        } finally {
          clearTimeout(reloaded);
        }
        assert.ok(Date.now() - started >= 750, 'answered once the version was back');
        assert.ok(
          !fake.fullWeights.calls.some((c) => c.route === '/collective_rpc'),
          'the call reloaded nothing itself',
        );
      });

      it('with another replica left, one on other weights sends the call there at once', async () => {
        const other = await FakeOpenAIServer.start();
        try {
          const endpoint = onReplicas([fake.url, other.url]);
          const [first] = replicaOrder(endpoint, 1);
          const [restarted, serving] = first === fake.url ? [fake, other] : [other, fake];
          restarted.fullWeights.version = 'default';
          serving.fullWeights.version = 'run@1';
          const started = Date.now();
          assert.equal((await say(endpoint)).weightVersion, 'run@1');
          assert.ok(Date.now() - started < 400, 'no wait on the restarted replica');
          assert.deepEqual(
            restarted.fullWeights.calls.map((c) => c.route),
            ['/weight_info'],
          );
          assert.ok(serving.calls.some((c) => c.role === 'policy' && c.status === 200));
        } finally {
          await other.close();
        }
      });
    });

    describe('with in-flight updates (acceptNewerWeights: the version is the oldest the call takes)', () => {
      const inFlight = (oldest: string) =>
        generatePolicyTurn({
          endpoint: { ...endpointAt(oldest), acceptNewerWeights: true },
          messages: [{ role: 'user', content: 'hi' }],
          think: false,
          seed: 1,
        });
      const policyCalls = () => fake.calls.filter((c) => c.role === 'policy');

      it('a newer version of the run is sampled as it is and recorded; nothing is reloaded', async () => {
        fake.fullWeights.version = 'run@2';
        assert.equal((await inFlight('run@1')).weightVersion, 'run@2');
        assert.deepEqual(
          fake.fullWeights.calls.map((c) => c.route),
          ['/weight_info', '/weight_info'],
        );
      });

      it('an older version, the launch weights or another run are reloaded to the oldest it takes, which it then records', async () => {
        for (const served of ['run@0', 'default', 'other@5']) {
          fake.fullWeights.version = served;
          assert.equal((await inFlight('run@1')).weightVersion, 'run@1', served);
          assert.equal(fake.fullWeights.weightsPath, '/state/run/step-1');
          fake.fullWeights.weightsPath = null;
        }
        assert.ok(fake.fullWeights.calls.some((c) => c.route === '/pause?mode=keep'));
      });

      it('a publish of a newer version under way (`loading run@2`) is waited for, then that version is sampled', async () => {
        fake.fullWeights.version = 'loading run@2';
        const call = inFlight('run@1');
        await eventually('the call asking the label again', async () =>
          fake.fullWeights.calls.filter((c) => c.route === '/weight_info').length >= 2 ? true : undefined,
        );
        fake.fullWeights.version = 'run@2';
        assert.equal((await call).weightVersion, 'run@2');
        assert.equal(fake.fullWeights.weightsPath, null, 'the call reloaded nothing itself');
        assert.deepEqual(
          policyCalls().map((c) => c.weights),
          [['run@2']],
        );
      });

      it('a call frozen across a publish (pause keep) is asked again at once, the same request, and records the version of the second ask', async () => {
        fake.fullWeights.version = 'run@1';
        fake.inject('policy', 1, 'hold');
        const call = inFlight('run@1');
        await fake.waitForCall('policy', 1);
        // The publish pauses with the call in flight; the call's generation ends while vLLM is paused, so it stays frozen until the resume.
        fake.fullWeights.afterPause = () => fake.release();
        await publish('run@2', '/state/run/step-2', 'keep');
        const result = await call;
        assert.equal(result.weightVersion, 'run@2');
        const calls = policyCalls();
        assert.deepEqual(
          calls.map((c) => [c.status, c.weights]),
          [
            [200, ['run@1', 'run@2']],
            [200, ['run@2']],
          ],
        );
        assert.equal(calls[0]!.key, calls[1]!.key, 'the same request (messages and seed) asked again');
        assert.equal(result.raw, calls[1]!.answer, "the second ask's reply is the one recorded");
      });
    });

    it('weights changed while the call ran: the call fails to be asked again, recording nothing', async () => {
      fake.fullWeights.version = 'run@1';
      fake.inject('policy', 1, 'hold');
      const call = turn('run@1');
      await fake.waitForCall('policy', 1);
      fake.fullWeights.version = 'run@2';
      fake.release();
      await assert.rejects(
        call,
        (error: unknown) =>
          error instanceof ApplicationFailure &&
          error.type === 'PolicyWeightsChanged' &&
          !error.nonRetryable &&
          /served "run@2" once the call ended, not run@1/.test(error.message),
      );
    });
  });
});
