import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import type { AttuneConfig } from '../../src/config/schema.js';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import type { RolloutSummary } from '../../src/core/transcript.js';
import { createLogger } from '../../src/log.js';
import { connectTemporal, connectWorkerSide, type TemporalHandle } from '../../src/temporal/connect.js';
import { createLlmIoWorkers } from '../../src/workers/llmIoWorkers.js';
import type { rollout } from '../../src/workflows/rollout.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { fixtureScenario, testConfigSet } from '../support/rolloutRig.js';
import { RunningWorkers } from '../support/runningWorkers.js';
import { sharedTestEnv, sharedWorkflowBundle } from '../support/temporalEnv.js';
import { makeTestCertificates, type TestCertificates } from '../support/testCertificates.js';
import { TlsGrpcProxy } from '../support/tlsGrpcProxy.js';

const API_KEY_VAR = 'ATTUNE_TEST_TEMPORAL_API_KEY';
const API_KEY = 'test-api-key-7f3c';
const baker = fixtureScenario('test-venting-negative-baker');
const quiet = createLogger({ component: 'tls-test' }, 'error');

/** Client calls and worker calls: each side must have gone through the front. */
const CLIENT_CALLS = ['GetSystemInfo', 'StartWorkflowExecution', 'GetWorkflowExecutionHistory'];
const WORKER_CALLS = ['PollWorkflowTaskQueue', 'RespondWorkflowTaskCompleted', 'PollActivityTaskQueue'];

describe('Temporal over TLS, mTLS and API keys (real dev server behind a TLS front)', function () {
  this.timeout(120_000);
  let certs: TestCertificates;
  let upstream: string;
  let fake: FakeOpenAIServer;
  let proxy: TlsGrpcProxy | undefined;

  before(async () => {
    certs = makeTestCertificates();
    upstream = (await sharedTestEnv()).address;
    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 4 }) });
  });
  after(async () => {
    await fake.close();
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
    delete process.env[API_KEY_VAR];
  });

  function configFor(set: string[], env: NodeJS.ProcessEnv = {}): AttuneConfig {
    return loadConfig({ env: { TEMPORAL_ADDRESS: proxy!.address, ...env }, set: testConfigSet(fake.url, set) });
  }

  /** One dialogue, with the client and the workers connected as the CLI connects them. */
  async function rolloutThrough(config: AttuneConfig): Promise<RolloutSummary> {
    const temporal: TemporalHandle = await connectTemporal(config, quiet, { startIfMissing: false });
    const running = new RunningWorkers();
    const connection = await connectWorkerSide(temporal);
    try {
      running.start(
        await createLlmIoWorkers({
          connection,
          namespace: temporal.namespace,
          config,
          store: new FileArtifactStore(join(config.home, 'artifacts')),
          workflowBundle: await sharedWorkflowBundle(),
        }),
      );
      const rolloutId = `tls-${Date.now()}`;
      return await temporal.client.workflow.execute<typeof rollout>('rollout', {
        taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
        workflowId: rolloutId,
        args: [
          { rolloutId, scenario: baker, settings: { ...rolloutSettingsFromConfig(config), maxTurns: 2 }, seed: 1 },
        ],
      });
    } finally {
      await running.stop();
      await connection.close();
      await temporal.close();
    }
  }

  /** The connection attempt fails, within a bound, with an error naming the address and `pattern`. */
  async function assertConnectFails(config: AttuneConfig, pattern: RegExp): Promise<void> {
    const started = Date.now();
    await assert.rejects(connectTemporal(config, quiet, { startIfMissing: false }), (error: unknown) => {
      const message = (error as Error).message;
      if (process.env.SHOW) console.log(message);
      assert.ok(message.includes(`Temporal server at ${proxy!.address}`), message);
      assert.match(message, pattern);
      return true;
    });
    assert.ok(Date.now() - started < 20_000, `failed after ${Date.now() - started} ms`);
  }

  it('runs a rollout through an mTLS front, client and workers configured from temporal.tls', async () => {
    proxy = await TlsGrpcProxy.start({
      upstream,
      certFile: certs.serverCert,
      keyFile: certs.serverKey,
      clientCaFile: certs.caCert,
    });
    const summary = await rolloutThrough(
      configFor([
        `temporal.tls.caFile=${certs.caCert}`,
        `temporal.tls.certFile=${certs.clientCert}`,
        `temporal.tls.keyFile=${certs.clientKey}`,
        // The front listens on 127.0.0.1: Node 26 refuses an IP as the TLS server name (test below).
        'temporal.tls.serverName=localhost',
      ]),
    );
    assert.equal(summary.turns, 2);
    assert.equal(summary.finalEmotion, 48);
    for (const call of [...CLIENT_CALLS, ...WORKER_CALLS]) assert.ok(proxy.forwarded.includes(call), call);
  });

  it('over TLS to an IP address without serverName: connects before Node 26, and on Node 26 fails naming temporal.tls.serverName', async () => {
    proxy = await TlsGrpcProxy.start({ upstream, certFile: certs.serverCert, keyFile: certs.serverKey });
    const config = configFor([], { TEMPORAL_TLS_CA: certs.caCert });
    if (Number(process.versions.node.split('.')[0]) < 26) {
      const handle = await connectTemporal(config, quiet, { startIfMissing: false });
      await handle.close();
      return;
    }
    await assertConnectFails(
      config,
      /, TLS\) did not answer.*refuses the address as the TLS server name.*set temporal\.tls\.serverName/,
    );
  });

  it('serverName is the name the certificate is checked against', async () => {
    proxy = await TlsGrpcProxy.start({ upstream, certFile: certs.serverCert, keyFile: certs.serverKey });
    const good = await connectTemporal(
      configFor([], { TEMPORAL_TLS_CA: certs.caCert, TEMPORAL_TLS_SERVER_NAME: 'localhost' }),
      quiet,
      {
        startIfMissing: false,
      },
    );
    await good.close();
    await assertConnectFails(
      configFor([], { TEMPORAL_TLS_CA: certs.caCert, TEMPORAL_TLS_SERVER_NAME: 'not-the-server.example' }),
      /\(TEMPORAL_ADDRESS \/ temporal\.address, TLS\).*set temporal\.tls\.serverName/,
    );
  });

  it('without a client certificate, with a wrong CA or in plain gRPC, connecting fails within the connect timeout, naming the address and the cause', async () => {
    proxy = await TlsGrpcProxy.start({
      upstream,
      certFile: certs.serverCert,
      keyFile: certs.serverKey,
      clientCaFile: certs.caCert,
    });
    await assertConnectFails(
      configFor([`temporal.tls.caFile=${certs.caCert}`]),
      /, TLS\) did not answer.*client certificate/,
    );
    await assertConnectFails(
      configFor([
        `temporal.tls.caFile=${certs.otherCaCert}`,
        `temporal.tls.certFile=${certs.clientCert}`,
        `temporal.tls.keyFile=${certs.clientKey}`,
      ]),
      /, mTLS\) did not answer.*not signed by temporal\.tls\.caFile/,
    );
    await assertConnectFails(configFor([]), /, plaintext\) did not answer.*the server speaks TLS: set temporal\.tls/);
    assert.ok(proxy.tlsErrors.length >= 2, `handshakes refused by the front: ${proxy.tlsErrors.join('; ')}`);
    assert.equal(proxy.forwarded.length, 0);
  });

  it('the worker connection fails too without the client certificate, naming the address', async () => {
    proxy = await TlsGrpcProxy.start({
      upstream,
      certFile: certs.serverCert,
      keyFile: certs.serverKey,
      clientCaFile: certs.caCert,
    });
    const handle = {
      connectionOptions: { address: proxy.address, tls: { serverRootCACertificate: readFileSync(certs.caCert) } },
    } as unknown as TemporalHandle;
    const started = Date.now();
    await assert.rejects(
      connectWorkerSide(handle),
      new RegExp(`workers could not connect to the Temporal server at ${proxy.address} \\(TLS\\)`),
    );
    assert.ok(Date.now() - started < 20_000, `failed after ${Date.now() - started} ms`);
  });

  it('sends the API key of temporal.apiKeyEnv on every client and worker call; a missing variable is named', async () => {
    proxy = await TlsGrpcProxy.start({
      upstream,
      certFile: certs.serverCert,
      keyFile: certs.serverKey,
      apiKey: API_KEY,
    });
    // The front checks the key: a client without it is refused.
    await assert.rejects(
      Connection.connect({
        address: proxy.address,
        tls: { serverRootCACertificate: readFileSync(certs.caCert), serverNameOverride: 'localhost' },
      }),
      (error: unknown) => /UNAUTHENTICATED/.test(String((error as Error).cause)),
    );
    const env = {
      TEMPORAL_TLS_CA: certs.caCert,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
      TEMPORAL_API_KEY_ENV: API_KEY_VAR,
    };
    await assert.rejects(
      connectTemporal(configFor([], env), quiet, { startIfMissing: false }),
      new RegExp(`temporal\\.apiKeyEnv: the environment variable ${API_KEY_VAR} is not set`),
    );
    process.env[API_KEY_VAR] = '';
    await assert.rejects(
      connectTemporal(configFor([], env), quiet, { startIfMissing: false }),
      new RegExp(`${API_KEY_VAR} is empty`),
    );
    process.env[API_KEY_VAR] = API_KEY;
    const refusedBefore = proxy.refused.length;
    proxy.forwarded.length = 0;
    const summary = await rolloutThrough(configFor([], env));
    assert.equal(summary.turns, 2);
    for (const call of [...CLIENT_CALLS, ...WORKER_CALLS]) assert.ok(proxy.forwarded.includes(call), call);
    assert.equal(proxy.refused.length, refusedBefore, `refused: ${proxy.refused.slice(refusedBefore).join(', ')}`);
  });
});
