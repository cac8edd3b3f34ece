import assert from 'node:assert/strict';
import {
  buildEvaluationReport,
  completeEvaluationReport,
  type EvaluationEntry,
  type StoredEvaluationReport,
} from '../../src/core/evaluationReport.js';
import { compareEvaluations } from '../../src/client/evaluationComparison.js';

const tokens = { policyPrompt: 10, policyCompletion: 5, simulatorPrompt: 20, simulatorCompletion: 8 };
function ok(
  id: string,
  finalEmotion: number,
  turns: number,
  goalType: 'venting' | 'deep-empathy',
  personality: 'negative' | 'passive',
): EvaluationEntry {
  return {
    status: 'ok',
    scenarioId: id,
    goalType,
    personality,
    finalEmotion,
    outcome: finalEmotion >= 100 ? 'success' : finalEmotion < 10 ? 'failure' : 'turn-limit',
    turns,
    emotions: [40, finalEmotion],
    tokens,
    artifact: `rollouts/x/${id}.json`,
  };
}

function report(evalId: string, results: EvaluationEntry[]) {
  return buildEvaluationReport({
    evalId,
    createdAt: '2026-01-01T00:00:00Z',
    policyModel: 'p',
    simulatorModel: 's',
    scenarios: 'test',
    settings: { initialEmotion: 40, maxTurns: 10, think: false, simulatorTemperature: 0 },
    results,
    runName: null,
    step: null,
  });
}

describe('Sentient score arithmetic', () => {
  it('scores mean final emotion, counts success (>= 100) and failure (< 10), and excludes failed dialogues', () => {
    const r = report('e1', [
      ok('a', 100, 4, 'venting', 'negative'),
      ok('b', 9, 6, 'venting', 'passive'),
      ok('c', 10, 10, 'deep-empathy', 'negative'),
      ok('d', 62, 10, 'deep-empathy', 'passive'),
      { status: 'failed', scenarioId: 'e', goalType: 'venting', personality: 'negative', error: 'endpoint down' },
    ]);
    assert.equal(r.count, 4);
    assert.equal(r.failed, 1);
    assert.equal(r.score, 45.25); // (100 + 9 + 10 + 62) / 4
    assert.equal(r.success, 1);
    assert.equal(r.failure, 1); // 9 < 10; 10 is not a failure
    assert.equal(r.meanTurns, 7.5);
    assert.deepEqual(r.byGoalType.venting, { count: 2, score: 54.5, success: 1, failure: 1, meanTurns: 5 });
    assert.deepEqual(r.byGoalType['deep-empathy'], { count: 2, score: 36, success: 0, failure: 0, meanTurns: 10 });
    assert.equal(r.byPersonality.negative?.score, 55); // (100 + 10) / 2; the failed one is excluded
    assert.equal(r.byPersonality.negative?.count, 2);
    assert.equal(r.tokens.policyPrompt, 40);
  });

  it('an evaluation whose dialogues all failed scores 0 over 0, not NaN', () => {
    const r = report('e2', [
      { status: 'failed', scenarioId: 'x', goalType: 'venting', personality: 'negative', error: 'boom' },
    ]);
    assert.equal(r.score, 0);
    assert.equal(r.count, 0);
    assert.equal(r.failed, 1);
  });

  it('compare gives per-scenario and aggregate differences', () => {
    const a = report('A', [ok('s1', 40, 10, 'venting', 'negative'), ok('s2', 100, 3, 'venting', 'negative')]);
    const b = report('B', [
      ok('s1', 55, 10, 'venting', 'negative'),
      { status: 'failed', scenarioId: 's2', goalType: 'venting', personality: 'negative', error: 'x' },
    ]);
    const c = compareEvaluations(a, b);
    assert.deepEqual(c.score, { a: 70, b: 55, delta: -15 });
    assert.deepEqual(c.scenarios, [
      { id: 's1', a: 40, b: 55, delta: 15 },
      { id: 's2', a: 100, b: null, delta: null },
    ]);
  });

  it('reports 95 % bootstrap intervals of score, success and failure rates, overall and per goal type', () => {
    const r = report('ci', [
      ok('a', 100, 4, 'venting', 'negative'),
      ok('b', 9, 6, 'venting', 'passive'),
      ok('c', 50, 10, 'deep-empathy', 'negative'),
      ok('d', 62, 10, 'deep-empathy', 'passive'),
    ]);
    assert.ok(r.ci.low < r.score && r.score < r.ci.high);
    assert.ok(r.ci.low >= 9 && r.ci.high <= 100);
    assert.deepEqual(r.ci, r.intervals.overall.score);
    assert.equal(r.intervals.overall.successRate.value, 0.25);
    assert.equal(r.intervals.overall.failureRate.value, 0.25);
    assert.equal(r.intervals.level, 0.95);
    const venting = r.intervals.byGoalType.venting!;
    assert.deepEqual([venting.dialogues, venting.scenarios], [2, 2]);
    assert.ok(venting.score.low >= 9 && venting.score.high <= 100);
    assert.deepEqual(r.intervals.byGoalType['deep-empathy']!.successRate, { value: 0, ci: { low: 0, high: 0 } });
    assert.ok(r.intervals.byPersonality.negative);
    assert.equal(r.repeats, 1);
    assert.equal(r.manifest, null);
  });

  it('fills in the intervals of a report written before them', () => {
    const {
      ci: _ci,
      intervals: _intervals,
      repeats: _repeats,
      manifest: _manifest,
      ...old
    } = report('old', [ok('a', 40, 4, 'venting', 'negative'), ok('b', 40, 6, 'venting', 'passive')]);
    const completed = completeEvaluationReport(old as StoredEvaluationReport);
    assert.deepEqual(completed.ci, { low: 40, high: 40 });
    assert.equal(completed.repeats, 1);
    assert.equal(completed.manifest, null);
  });

  it('compare pairs dialogues by scenario and repeat: difference, interval, p-value, verdict', () => {
    const results = (shift: number) =>
      ['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8'].flatMap((id, i) =>
        [0, 1].map((repeat) => ({ ...ok(id, 30 + i * 5 + repeat + shift, 5, 'venting', 'negative'), repeat })),
      );
    const a = report('A', results(0));
    const same = compareEvaluations(a, report('B', results(0)));
    assert.deepEqual(
      [same.difference, same.ci, same.pValue, same.significant, same.verdict],
      [0, { low: 0, high: 0 }, 1, false, 'not significant'],
    );
    const better = compareEvaluations(a, report('B', results(12)));
    assert.equal(better.difference, 12);
    assert.deepEqual(better.ci, { low: 12, high: 12 });
    assert.equal(better.pValue, 0.0078); // 2 / 2^8: exact over 8 scenarios
    assert.equal(better.significant, true);
    assert.equal(better.pairs, 16);
    assert.equal(better.pairedScenarios, 8);
    assert.deepEqual(better.scenarios[0], { id: 's1', a: 30.5, b: 42.5, delta: 12 });
    assert.deepEqual(better.dialogues[1], { id: 's1', repeat: 1, a: 31, b: 43, delta: 12 });
    assert.deepEqual(better.warnings, [
      'no manifest for A and B (written before manifests): protocol differences cannot be checked',
    ]);
  });
});
