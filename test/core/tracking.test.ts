import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { trackingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { trackingStatusLine } from '../../src/core/tracking/trackingHealth.js';
import { afterAttempt, emptyBackendLedger, stepsToLog } from '../../src/core/tracking/trackingLedger.js';
import { crc32c, stepEventFileName, tfRecord } from '../../src/core/tracking/tfEvents.js';
import { flatParams, stepScalars } from '../../src/core/tracking/trackedValues.js';

describe('experiment tracking: pure parts', () => {
  it('CRC-32C matches the standard check value, and a TFRecord frames its data', () => {
    assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
    const record = tfRecord(new Uint8Array([1, 2, 3]));
    assert.equal(record.length, 8 + 4 + 3 + 4);
    assert.equal(new DataView(record.buffer).getBigUint64(0, true), 3n);
    assert.deepEqual([...record.subarray(12, 15)], [1, 2, 3]);
  });

  it('event file names sort in step order', () => {
    const names = [10, 9, 100, 1].map(stepEventFileName);
    assert.deepEqual([...names].sort(), [1, 9, 10, 100].map(stepEventFileName));
  });

  it('the ledger logs a step once, keeps failed steps pending, and retries them first', () => {
    let ledger = emptyBackendLedger();
    assert.deepEqual(stepsToLog(ledger, 1), [1]);
    ledger = afterAttempt(ledger, [1], [], { error: 'refused', at: '2026-01-01T00:00:00.000Z' });
    assert.deepEqual(ledger.pendingSteps, [1]);
    ledger = afterAttempt(ledger, stepsToLog(ledger, 2), [], { error: 'refused', at: '2026-01-01T00:01:00.000Z' });
    assert.deepEqual(ledger.pendingSteps, [1, 2]);
    assert.equal(ledger.downSince, '2026-01-01T00:00:00.000Z', 'the outage started at the first failure');
    assert.deepEqual(stepsToLog(ledger, 3), [1, 2, 3]);
    ledger = afterAttempt(ledger, [1, 2, 3], [1, 2, 3], null);
    assert.deepEqual(ledger, { loggedThrough: 3, pendingSteps: [], downSince: null, lastError: null });
    assert.deepEqual(stepsToLog(ledger, 3), [], 'a repeated step is not logged again');
  });

  it('status names a tracker behind, and nothing when all are up to date', () => {
    assert.equal(trackingStatusLine([{ backend: 'mlflow', pendingSteps: [], downSince: null, lastError: null }]), null);
    assert.equal(
      trackingStatusLine([
        { backend: 'mlflow', pendingSteps: [2, 3], downSince: '2026-01-01T00:00:00.000Z', lastError: 'ECONNREFUSED' },
      ]),
      'mlflow down since 2026-01-01T00:00:00.000Z, 2 steps pending (ECONNREFUSED)',
    );
  });

  it('flattens params and step metrics, leaving out values a tracker cannot draw', () => {
    assert.deepEqual(flatParams({ a: { b: 1, c: [1, 2] }, d: 'x', e: null, f: undefined }), {
      'a.b': '1',
      'a.c': '[1,2]',
      d: 'x',
      e: 'null',
    });
    const record = {
      step: 1,
      reward: { mean: 50, std: 1, min: 40, max: 60 },
      rollouts: { ok: 4, failed: 0, dropped: 0 },
      successRate: 0.5,
      failureRate: 0,
      malformedRate: 0,
      meanTurns: 2,
      trainer: { loss: Number.NaN, kl: 0.1 },
      eval: { evalId: 'e', score: 70, success: 0.25, failure: 0, count: 4 },
      turnReward: { mean: 0.1, std: 0.2, min: -0.1, max: 0.3 },
      signals: { replies: 8, replyLengthMean: 12, emptyShare: 0.25 },
      guardrails: [{ rule: 'empty-replies', action: 'warn', message: 'm' }],
    } as unknown as StepMetricsRecord;
    const scalars = stepScalars(record);
    assert.equal(scalars['turn_reward/min'], -0.1);
    assert.equal(scalars['signals/emptyShare'], 0.25);
    assert.equal(scalars['guardrails/tripped'], 1);
    assert.equal(scalars['reward/mean'], 50);
    assert.equal(scalars['trainer/kl'], 0.1);
    assert.equal(scalars['eval/score'], 70);
    assert.ok(!('trainer/loss' in scalars), 'NaN is left out');
    assert.ok(!('publish/latency_ms' in scalars), 'no publish latency: none tracked');
    assert.equal(stepScalars({ ...record, publishLatencyMs: 64 })['publish/latency_ms'], 64);
    assert.ok(!('publish/latency_ms' in stepScalars({ ...record, publishLatencyMs: null })));
  });

  it("config: the trackers' own variables turn them on; none by default", () => {
    assert.equal(trackingSettingsFromConfig(loadConfig({ env: {} }), {}), null);
    const env = { MLFLOW_TRACKING_URI: 'http://127.0.0.1:5000', WANDB_PROJECT: 'p' };
    const tracking = trackingSettingsFromConfig(loadConfig({ env }), env);
    assert.deepEqual(tracking?.mlflow, { trackingUri: 'http://127.0.0.1:5000', experiment: 'attune' });
    assert.equal(tracking?.wandb?.project, 'p');
    assert.equal(tracking?.wandb?.mode, 'offline', 'offline without WANDB_API_KEY');
    const online = trackingSettingsFromConfig(loadConfig({ env: { WANDB_MODE: 'online' } }), {});
    assert.equal(online?.wandb?.mode, 'online');
    assert.equal(trackingSettingsFromConfig(loadConfig({ env: { WANDB_MODE: 'disabled' } }), {}), null);
    assert.throws(() => loadConfig({ env: { MLFLOW_TRACKING_URI: 'not a url' } }), /tracking\.mlflow\.trackingUri/);
    assert.throws(
      () => loadConfig({ env: {}, set: ['tracking.mlflow.experiment=x'] }),
      /tracking\.mlflow\.trackingUri/,
    );
  });
});
