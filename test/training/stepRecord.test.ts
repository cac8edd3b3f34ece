import assert from 'node:assert/strict';
import type { TrainerStepMetrics } from '../../src/core/runMetrics.js';
import { mean, valueStats } from '../../src/core/statistics/valueStats.js';
import { stepEvalSummary, stepMetricsRecord } from '../../src/core/training/stepRecord.js';
import type { RolloutSummary } from '../../src/core/transcript.js';

const TRAINER = { loss: 0.1, kl: 0, tokens: 12 } as TrainerStepMetrics;
const dialogue = (reward: number, outcome: RolloutSummary['outcome'], turns: number) =>
  ({ reward, outcome, turns }) as RolloutSummary;

describe("a step's metrics record", () => {
  it('mean and stats are 0 for no values; std is the population deviation', () => {
    assert.equal(mean([]), 0);
    assert.deepEqual(valueStats([]), { mean: 0, std: 0, min: 0, max: 0 });
    assert.deepEqual(valueStats([1, 3]), { mean: 2, std: 1, min: 1, max: 3 });
  });

  it('rates are over the kept dialogues; counts, versions and trainer metrics as given', () => {
    const record = stepMetricsRecord({
      runName: 'run',
      step: 2,
      algorithm: 'grpo',
      time: '2025-01-01T00:00:00.000Z',
      policyVersion: 'run@1',
      kept: [
        dialogue(1, 'success', 3),
        dialogue(0, 'failure', 2),
        dialogue(0.5, 'malformed', 1),
        dialogue(0.5, 'goodbye', 2),
      ],
      failed: 1,
      dropped: 2,
      trainer: TRAINER,
    });
    assert.deepEqual(record, {
      kind: 'attune.step',
      run: 'run',
      step: 2,
      algorithm: 'grpo',
      time: '2025-01-01T00:00:00.000Z',
      policyVersion: 'run@1',
      rollouts: { ok: 4, failed: 1, dropped: 2 },
      reward: { mean: 0.5, std: Math.sqrt(0.125), min: 0, max: 1 },
      successRate: 0.25,
      failureRate: 0.25,
      malformedRate: 0.25,
      meanTurns: 2,
      trainer: TRAINER,
    });
    assert.equal('eval' in record, false, 'no eval key on a step without an evaluation');
    // The line's key order is part of metrics.jsonl as written.
    assert.deepEqual(Object.keys(record).slice(0, 6), ['kind', 'run', 'step', 'algorithm', 'time', 'policyVersion']);
  });

  it("carries the evaluation's headline numbers on steps that ran one", () => {
    const summary = { evalId: 'ignored', score: 61, success: 1, failure: 0, count: 2, meanTurns: 3 };
    const evalSummary = stepEvalSummary('run-eval-s2', summary);
    assert.deepEqual(evalSummary, { evalId: 'run-eval-s2', score: 61, success: 1, failure: 0, count: 2 });
    const record = stepMetricsRecord({
      runName: 'run',
      step: 2,
      algorithm: 'ppo',
      time: 't',
      policyVersion: 'run@1',
      kept: [dialogue(1, 'success', 1)],
      failed: 0,
      dropped: 0,
      trainer: TRAINER,
      eval: evalSummary,
    });
    assert.deepEqual(record.eval, evalSummary);
  });

  it("carries each simulator's score and gap on steps whose evaluation had held-out simulators", () => {
    const summary = {
      score: 61,
      success: 1,
      failure: 0,
      count: 2,
      simulators: [
        { name: 'training', score: 61, count: 2, failed: 0, gap: 0 },
        { name: 'alt', score: 52.5, count: 2, failed: 0, gap: 8.5 },
      ],
    };
    assert.deepEqual(stepEvalSummary('run-eval-s2', summary).simulators, [
      { name: 'training', score: 61, count: 2, gap: 0 },
      { name: 'alt', score: 52.5, count: 2, gap: 8.5 },
    ]);
    assert.equal('simulators' in stepEvalSummary('e', { score: 1, success: 0, failure: 0, count: 1 }), false);
  });

  it("adds up the kept dialogues' rate-limit waits per endpoint, and leaves the key out when none waited", () => {
    const base = {
      runName: 'run',
      step: 1,
      algorithm: 'grpo' as const,
      time: 't',
      policyVersion: 'run@0',
      failed: 0,
      dropped: 0,
      trainer: TRAINER,
    };
    const waited = (policyMs: number, simulatorMs: number) => ({
      ...dialogue(1, 'success', 1),
      rateLimitWaits: {
        policy: { waits: policyMs ? 1 : 0, waitMs: policyMs },
        simulator: { waits: simulatorMs ? 2 : 0, waitMs: simulatorMs },
      },
    });
    const record = stepMetricsRecord({
      ...base,
      kept: [waited(1500, 0), waited(250, 4000), dialogue(1, 'success', 1)],
    });
    assert.deepEqual(record.rateLimitWaits, {
      policy: { waits: 2, seconds: 1.75 },
      simulator: { waits: 2, seconds: 4 },
    });
    assert.equal('rateLimitWaits' in stepMetricsRecord({ ...base, kept: [dialogue(1, 'success', 1)] }), false);
  });
});
