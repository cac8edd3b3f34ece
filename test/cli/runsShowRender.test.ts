import assert from 'node:assert/strict';
import { runDetailStep, type RunDetail } from '../../src/client/runDetail.js';
import { renderRunDetail } from '../../src/cli/render/runListing.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { stepRecord } from '../report/fixtures.js';

/** Step 1 of an older trainer (no off-policy figures); step 2 sampled one version old and was weighed. */
const OLD = stepRecord(1);
const OFF_POLICY: StepMetricsRecord = {
  ...stepRecord(2),
  publishLatencyMs: 87,
  commitToAnswerMs: 3.5,
  trainer: {
    ...stepRecord(2).trainer,
    staleness_histogram: { '1': 6, '0': 2 },
    is_weight_mean: 1.0123,
    is_weight_max: 1.8,
    is_truncated_share: 0.015,
  },
};

function detail(records: StepMetricsRecord[]): RunDetail {
  return {
    run: {
      name: 'grpo-demo',
      status: 'COMPLETED',
      phase: 'done',
      step: 2,
      lastReward: 0.44,
      started: '2026-01-01T03:00:00.000Z',
      updated: '2026-01-02T03:00:00.000Z',
    },
    latestVersion: 'grpo-demo@2',
    steps: records.map(runDetailStep),
    evaluations: [],
    notes: [],
  };
}

describe('attune runs show: off-policy figures and publish latency per step', () => {
  it('--json carries staleness and importance weights beside the fields it had, null where not reported', () => {
    const [old, offPolicy] = (JSON.parse(JSON.stringify(detail([OLD, OFF_POLICY]))) as RunDetail).steps;
    assert.deepEqual(old, {
      step: 1,
      sampledFrom: 'grpo-demo@0',
      rewardMean: OLD.reward.mean,
      successRate: OLD.successRate,
      evalScore: null,
      stalenessHistogram: null,
      isWeightMean: null,
      isWeightMax: null,
      isTruncatedShare: null,
      publishLatencyMs: null,
      commitToAnswerMs: null,
    });
    assert.deepEqual(offPolicy, {
      step: 2,
      sampledFrom: 'grpo-demo@1',
      rewardMean: OFF_POLICY.reward.mean,
      successRate: OFF_POLICY.successRate,
      evalScore: null,
      stalenessHistogram: { '0': 2, '1': 6 },
      isWeightMean: 1.0123,
      isWeightMax: 1.8,
      isTruncatedShare: 0.015,
      publishLatencyMs: 87,
      commitToAnswerMs: 3.5,
    });
  });

  it('lists them in the step table, with dashes for a step of an older trainer', () => {
    const text = renderRunDetail(detail([OLD, OFF_POLICY]));
    assert.match(
      text,
      /^step +sampled from +reward +success +eval score +staleness +IS mean +IS max +truncated +publish ms$/m,
    );
    assert.match(text, /^ +1 +grpo-demo@0 +[\d.]+ +[\d.]+ +- +- +- +- +- +-$/m);
    assert.match(text, /^ +2 +grpo-demo@1 +[\d.]+ +[\d.]+ +- +0:2 1:6 +1\.012 +1\.800 +1\.5% +87$/m);
    assert.doesNotMatch(text, /undefined|NaN|null/);
  });

  it('shows a single staleness as "k: n" and null weights (no sampler log-probs) as dashes', () => {
    const unweighed: StepMetricsRecord = {
      ...OFF_POLICY,
      trainer: {
        ...OFF_POLICY.trainer,
        staleness_histogram: { '0': 8 },
        is_weight_mean: null,
        is_weight_max: null,
        is_truncated_share: null,
      },
    };
    assert.match(renderRunDetail(detail([unweighed])), /^ +2 +grpo-demo@1 +[\d.]+ +[\d.]+ +- +0: 8 +- +- +- +87$/m);
  });
});
