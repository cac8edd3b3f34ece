import assert from 'node:assert/strict';
import {
  capabilityDropPoints,
  capabilityStepScore,
  droppedSuites,
  type CapabilityStepScore,
} from '../../src/core/capability/retention.js';
import type { CapabilitySummary } from '../../src/core/capability/capabilityReport.js';
import { wilsonInterval } from '../../src/core/statistics/wilson.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { checkRule, DEFAULT_GUARDRAILS, guardPointOf } from '../../src/core/training/guardrails.js';
import { guardrailSchema, type Guardrail } from '../../src/core/training/guardrailSchema.js';
import { stepScalars } from '../../src/core/tracking/trackedValues.js';

/** A suite run's headline of `solved` of `count`, as capabilityReport builds it. */
function summary(suite: 'math' | 'code', solved: number, count: number, step: number): CapabilitySummary {
  return {
    evalId: `run-eval-s${step}-${suite}`,
    suite,
    score: count > 0 ? solved / count : null,
    ci: wilsonInterval(solved, count),
    solved,
    count,
    failed: 0,
    artifact: `a/${suite}/${step}`,
  };
}

const base = (suite: 'math' | 'code', solved: number, count: number) => {
  const { evalId, score, ci } = summary(suite, solved, count, 0);
  return { suite, evalId, score, ci, count };
};

const DROP: Guardrail = { kind: 'capabilityDrop', name: 'capability-drop', action: 'pause', points: 5 };

describe('capability retention: the drop rule', () => {
  it("is the base's lower bound less the current upper bound, in percentage points", () => {
    const b = summary('math', 40, 50, 0);
    const c = summary('math', 20, 50, 3);
    const drop = capabilityDropPoints(b, c);
    assert.ok(drop !== null);
    assert.ok(Math.abs(drop - (b.ci!.low - c.ci!.high) * 100) < 1e-9);
    assert.equal(capabilityDropPoints(b, summary('math', 0, 0, 3)), null, 'nothing ran: no interval, no drop');
  });

  it('a drop that the intervals explain does not trip; one past the points does, naming the suite, both scores and intervals', () => {
    const bases = [base('math', 40, 50), base('code', 30, 50)];
    // 80 % -> 70 % of 50: the intervals overlap, a noisy suite's ordinary wobble.
    const wobble = [capabilityStepScore(summary('math', 35, 50, 2), bases)];
    assert.deepEqual(droppedSuites(wobble, 0), []);
    assert.equal(checkRule(DROP, [{ step: 2, signals: {}, capability: wobble }]), null);

    // 80 % -> 20 % on maths, code held: the base's lower bound is far above the current upper one.
    const fell = [
      capabilityStepScore(summary('math', 10, 50, 4), bases),
      capabilityStepScore(summary('code', 30, 50, 4), bases),
    ];
    const trip = checkRule(DROP, [{ step: 4, signals: {}, capability: fell }]);
    assert.ok(trip);
    assert.equal(trip.rule, 'capability-drop');
    assert.equal(trip.action, 'pause');
    assert.match(
      trip.message,
      /^guardrail capability-drop at step 4: math 20\.0 % \[11\.2, 33\.0\] of 50 fell below the base's math 80\.0 % \[67\.0, 88\.8\] of 50: the base's lower bound is 33\.926 points above the current upper bound \(limit 5\)$/,
    );
    assert.equal(trip.figures.score, 20);
    assert.equal(trip.figures.baseScore, 80);
    assert.equal(trip.figures.count, 50);
    assert.equal(trip.figures.points, 5);
    assert.ok(Math.abs(trip.figures.drop! - (trip.figures.baseLow! - trip.figures.high!)) < 1e-9);
    // A bar above the drop: no trip.
    assert.equal(checkRule({ ...DROP, points: 40 }, [{ step: 4, signals: {}, capability: fell }]), null);
  });

  it('several suites that dropped: the largest first, the others named too', () => {
    const bases = [base('math', 50, 50), base('code', 45, 50)];
    const both = [
      capabilityStepScore(summary('code', 5, 50, 6), bases),
      capabilityStepScore(summary('math', 0, 50, 6), bases),
    ];
    assert.deepEqual(
      droppedSuites(both, 5).map((d) => d.suite),
      ['math', 'code'],
    );
    const trip = checkRule(DROP, [{ step: 6, signals: {}, capability: both }]);
    assert.match(trip?.message ?? '', /: math 0\.0 % .*; also code \(\d+\.\d{3}\)$/);
  });

  it('without a base score (its evaluation failed) or without suites the rule never trips', () => {
    const noBase: CapabilityStepScore[] = [capabilityStepScore(summary('math', 0, 50, 2))];
    assert.equal(noBase[0]!.base, undefined);
    assert.equal(checkRule(DROP, [{ step: 2, signals: {}, capability: noBase }]), null);
    assert.equal(checkRule(DROP, [{ step: 2, signals: { reward: 0.5 } }]), null);
  });

  it("a record's suites reach the guardrails (with a base) and the trackers; the rule is in the schema, not in the defaults", () => {
    const record = {
      step: 3,
      reward: { mean: 0.5 },
      malformedRate: 0,
      capability: [capabilityStepScore(summary('math', 10, 50, 3), [base('math', 40, 50)])],
    } as unknown as StepMetricsRecord;
    assert.deepEqual(guardPointOf(record).capability, record.capability);
    const withoutBase = { ...record, capability: [capabilityStepScore(summary('math', 10, 50, 3))] };
    assert.equal(guardPointOf(withoutBase).capability, undefined);
    const scalars = stepScalars({
      ...record,
      rollouts: { ok: 1, failed: 0, dropped: 0 },
      trainer: {},
    } as StepMetricsRecord);
    assert.equal(scalars['capability/math/score'], 0.2);
    assert.equal(scalars['capability/math/count'], 50);
    assert.ok(scalars['capability/math/high']! > 0.2);
    assert.equal(guardrailSchema.parse(DROP).kind, 'capabilityDrop');
    assert.throws(() => guardrailSchema.parse({ ...DROP, points: -1 }));
    assert.ok(!DEFAULT_GUARDRAILS.some((g) => g.kind === 'capabilityDrop'), 'default-off');
  });
});
