import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { freePort } from '../../src/temporal/devServer.js';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { scrape, sumOf } from '../support/prometheusText.js';
import { WorkerProcess } from '../support/workerProcess.js';

describe('worker Prometheus metrics', function () {
  let rig: RolloutRig | undefined;
  let worker: WorkerProcess | undefined;
  afterEach(async () => {
    await worker?.kill();
    worker = undefined;
    await rig?.close();
    rig = undefined;
  });

  it('attune worker serves the SDK metrics and Attune counters that move with a rollout', async () => {
    // The policy's budget starts empty when the worker starts and earns 2,500 tokens a second: its
    // first call, charged about 20,000, waits whatever the start-up took (within its activity's
    // timeout, so no call is made twice).
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 2 }) },
      set: ['policy.tokensPerMinute=150000', 'policy.maxTokens=20000', 'policy.timeoutMs=30000'],
    });
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/metrics`;
    // A bare port binds loopback.
    worker = WorkerProcess.start(rig.env.address, [...rig.configSet, `metrics.prometheus=${port}`]);
    await worker.ready();
    assert.match(worker.log, new RegExp(`"metrics":"127\\.0\\.0\\.1:${port}"`));
    const before = await scrape(url);

    rig.fake.inject('policy', 2, '429');
    const summary = await (
      await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 5, { maxTurns: 3 })
    ).result();
    assert.equal(summary.outcome, 'turn-limit');
    const after = await scrape(url);
    const moved = (name: string, labels: Record<string, string> = {}) =>
      sumOf(after, name, labels) - sumOf(before, name, labels);

    // 3 policy turns, and the policy call answered 429 once before its retry.
    assert.equal(moved('attune_llm_calls_total', { endpoint: 'policy', status: 'ok' }), 3);
    assert.equal(moved('attune_llm_calls_total', { endpoint: 'policy', status: 'LlmRateLimited' }), 1);
    assert.ok(moved('attune_llm_retries_total', { endpoint: 'policy' }) >= 1, 'the retried call is counted');
    assert.ok(moved('attune_llm_calls_total', { endpoint: 'simulator', status: 'ok' }) >= 3);
    assert.equal(moved('attune_llm_latency_ms_count', { endpoint: 'policy' }), 3);
    assert.ok(moved('attune_llm_prompt_tokens_total', { endpoint: 'policy' }) > 0);
    assert.ok(moved('attune_llm_completion_tokens_total', { endpoint: 'simulator' }) > 0);
    assert.ok(moved('attune_llm_rate_limit_waits_total', { endpoint: 'policy' }) >= 1);
    assert.ok(moved('attune_llm_rate_limit_wait_ms_total', { endpoint: 'policy' }) > 0);
    assert.equal(moved('attune_llm_rate_limit_waits_total', { endpoint: 'simulator' }), 0, 'no simulator budget');
    assert.equal(moved('attune_rollouts_total', { outcome: 'turn-limit' }), 1);
    // The SDK's own metrics come out of the same endpoint.
    assert.ok(
      after.some((s) => s.name.startsWith('temporal_')),
      'no temporal_ metrics',
    );
  });

  it('a metrics port in use stops the worker with an error naming metrics.prometheus', async () => {
    rig = await createRolloutRig({});
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      worker = WorkerProcess.start(rig.env.address, [...rig.configSet, `metrics.prometheus=127.0.0.1:${port}`]);
      await assert.rejects(worker.ready(), new RegExp(`metrics\\.prometheus 127\\.0\\.0\\.1:${port}: .*in use`));
    } finally {
      taken.close();
    }
  });

  it('metrics.prometheus rejects an address that is not host:port, naming the key', async () => {
    const { loadConfig } = await import('../../src/config/load.js');
    assert.throws(() => loadConfig({ env: {}, set: ['metrics.prometheus=localhost'] }), /metrics\.prometheus/);
    assert.equal(loadConfig({ env: { ATTUNE_METRICS_ADDRESS: '0.0.0.0:9464' } }).metrics.prometheus, '0.0.0.0:9464');
    assert.equal(loadConfig({ env: {} }).metrics.prometheus, null);
  });
});
