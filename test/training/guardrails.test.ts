import assert from 'node:assert/strict';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import {
  acknowledged,
  checkRule,
  DEFAULT_GUARDRAILS,
  emptyGuardState,
  guardPointOf,
  guardStep,
  type GuardPoint,
} from '../../src/core/training/guardrails.js';
import { guardrailSchema, type Guardrail } from '../../src/core/training/guardrailSchema.js';
import { replySignals } from '../../src/core/training/replySignals.js';

const point = (step: number, signals: GuardPoint['signals']): GuardPoint => ({ step, signals });
const EMPTY: Guardrail = { kind: 'above', name: 'empty', action: 'pause', signal: 'emptyShare', value: 0.2 };

describe('reply signals', () => {
  it('length, near-empty share, repetition within a reply and distinct bigrams across the step', () => {
    const s = replySignals(['', ' a ', 'I hear you', 'so so so so so']);
    assert.equal(s.replies, 4);
    assert.equal(s.emptyShare, 0.5, "'' and 'a' are near-empty");
    assert.equal(s.replyLengthMean, (0 + 1 + 10 + 14) / 4);
    // 'so so so so so': 3 trigrams, all the same: 2 of 3 repeat; the others have none
    assert.ok(Math.abs(s.repetition - 2 / 3 / 4) < 1e-12);
    // bigrams: 'i hear', 'hear you', 'so so' x4 -> 3 distinct of 6
    assert.equal(s.distinctBigrams, 3 / 6);
    assert.equal(replySignals([]).distinctBigrams, 0);
  });
});

describe('guardrails', () => {
  it('above / below trip on the newest step with the figures', () => {
    const trip = checkRule(EMPTY, [point(1, { emptyShare: 0 }), point(2, { emptyShare: 0.5 })]);
    assert.ok(trip);
    assert.equal(trip.rule, 'empty');
    assert.equal(trip.step, 2);
    assert.deepEqual(trip.figures, { emptyShare: 0.5, limit: 0.2 });
    assert.match(trip.message, /empty at step 2: emptyShare 0\.500 above 0\.2/);
    assert.equal(checkRule(EMPTY, [point(1, { emptyShare: 0.2 })]), null, 'at the limit is not above it');
    assert.equal(checkRule(EMPTY, [point(1, {})]), null, 'an absent signal trips nothing');
    const low: Guardrail = { kind: 'below', name: 'diverse', action: 'warn', signal: 'distinctBigrams', value: 0.3 };
    assert.ok(checkRule(low, [point(1, { distinctBigrams: 0.1 })]));
  });

  it('growth compares with the value `steps` steps before', () => {
    const rule = DEFAULT_GUARDRAILS.find((r) => r.kind === 'growth')!;
    const lengths = [40, 45, 50, 60, 70, 81];
    const points = lengths.map((l, i) => point(i + 1, { replyLengthMean: l }));
    const trip = checkRule(rule, points);
    assert.ok(trip, '81 is more than twice 40, 5 steps before');
    assert.deepEqual(trip.figures, { before: 40, now: 81, ratio: 81 / 40, factor: 2 });
    assert.equal(checkRule(rule, points.slice(1)), null, 'too few steps');
    assert.equal(checkRule(rule, [...points.slice(0, 5), point(6, { replyLengthMean: 79 })]), null);
  });

  it('reward up while the last two evaluations fell', () => {
    const rule: Guardrail = { kind: 'rewardUpEvalDown', name: 'hack', action: 'pause', steps: 2, rise: 0.1 };
    const pts = [
      point(1, { reward: 0.3, evalChange: 5 }),
      point(2, { reward: 0.35, evalChange: -2 }),
      point(3, { reward: 0.5, evalChange: -1 }),
    ];
    const trip = checkRule(rule, pts);
    assert.ok(trip);
    assert.ok(Math.abs(trip.figures.rewardRise! - 0.2) < 1e-12);
    assert.equal(trip.figures.evalChange, -1);
    assert.equal(checkRule(rule, [pts[0]!, { ...pts[1]!, signals: { reward: 0.35, evalChange: 2 } }, pts[2]!]), null);
    assert.equal(checkRule(rule, [pts[0]!, pts[1]!, point(3, { reward: 0.38, evalChange: -1 })]), null);
  });

  describe('held-out gap widens', () => {
    const rule: Guardrail = {
      kind: 'heldOutGapWidens',
      name: 'gap',
      action: 'pause',
      evaluations: 3,
      rise: 5,
      fall: 5,
    };
    const evalAt = (step: number, training: number, ...heldOut: number[]): GuardPoint => ({
      step,
      signals: {},
      simulators: [{ name: 'train', score: training }, ...heldOut.map((score, i) => ({ name: `held${i}`, score }))],
    });
    const quiet = (step: number) => point(step, { reward: 0.3 });

    it('trips when the training simulator rises while a held-out one falls', () => {
      const pts = [evalAt(2, 50, 50, 50), quiet(3), evalAt(4, 54, 49, 48), quiet(5), evalAt(6, 57, 51, 43)];
      const trip = checkRule(rule, pts);
      assert.ok(trip);
      assert.equal(trip.step, 6);
      assert.equal(trip.figures.trainingRise, 7);
      assert.equal(trip.figures.heldOutFall, 7);
      assert.match(trip.message, /held1 fell 7/);
      // Only on the evaluation's own step.
      assert.equal(checkRule(rule, [...pts, quiet(7)]), null);
    });

    it('does not trip when both rise, both fall, without held-out simulators, or with too few evaluations', () => {
      assert.equal(checkRule(rule, [evalAt(2, 50, 50), evalAt(4, 54, 53), evalAt(6, 57, 58)]), null);
      assert.equal(checkRule(rule, [evalAt(2, 50, 50), evalAt(4, 46, 47), evalAt(6, 40, 41)]), null);
      assert.equal(checkRule(rule, [evalAt(2, 50), evalAt(4, 54), evalAt(6, 57)]), null);
      assert.equal(checkRule(rule, [point(2, { evalChange: 5 }), point(4, { evalChange: 5 })]), null);
      assert.equal(checkRule(rule, [evalAt(4, 50, 50), evalAt(6, 60, 40)]), null);
      // A rise or a fall below its limit.
      assert.equal(checkRule(rule, [evalAt(2, 50, 50), evalAt(4, 52, 48), evalAt(6, 54, 40)]), null);
      assert.equal(checkRule(rule, [evalAt(2, 50, 50), evalAt(4, 52, 48), evalAt(6, 60, 46)]), null);
    });

    it('trips with evaluations further apart than the 64 steps the state keeps (evalEvery 40), and did not before they were kept apart', () => {
      const scores: Record<number, [number, number]> = { 40: [50, 50], 80: [54, 48], 120: [57, 43] };
      const run = (evaluationsApart: boolean) => {
        let state = emptyGuardState();
        let pause = null;
        for (let step = 1; step <= 120; step++) {
          const s = scores[step];
          const p = s ? evalAt(step, s[0], s[1]) : quiet(step);
          ({ state, pause } = guardStep(state, [rule], p, { evaluationsApart }));
        }
        return { state, pause };
      };
      const { state, pause } = run(true);
      assert.equal(pause?.step, 120);
      assert.equal(pause?.figures.evaluations, 3);
      assert.deepEqual(
        state.evaluations?.map((p) => p.step),
        [40, 80, 120],
      );
      // As recorded histories ran: the step-40 evaluation had left the 64-point window.
      assert.equal(run(false).pause, null);
    });

    it('the step record supplies the scores only with held-out simulators', () => {
      const base = { step: 6, reward: { mean: 0.4 }, malformedRate: 0 };
      const sims = [
        { name: 'train', score: 57, count: 8, gap: 0 },
        { name: 'other', score: 43, count: 8, gap: 14 },
      ];
      const withSims = {
        ...base,
        eval: { evalId: 'e', score: 57, success: 1, failure: 0, count: 8, simulators: sims },
      };
      assert.deepEqual(guardPointOf(withSims as unknown as StepMetricsRecord).simulators, [
        { name: 'train', score: 57 },
        { name: 'other', score: 43 },
      ]);
      const alone = { ...withSims, eval: { ...withSims.eval, simulators: sims.slice(0, 1) } };
      assert.equal(guardPointOf(alone as unknown as StepMetricsRecord).simulators, undefined);
    });
  });

  it('reward up while the last two evaluations fell, with evaluations 70 steps apart', () => {
    const rule: Guardrail = { kind: 'rewardUpEvalDown', name: 'hack', action: 'pause', steps: 5, rise: 0.1 };
    let state = emptyGuardState();
    let pause = null;
    for (let step = 1; step <= 120; step++) {
      const evalChange = step === 50 ? -2 : step === 120 ? -3 : undefined;
      const reward = step <= 115 ? 0.3 : 0.3 + (step - 115) * 0.05;
      const p = point(step, { reward, ...(evalChange !== undefined ? { evalChange } : {}) });
      ({ state, pause } = guardStep(state, [rule], p));
    }
    assert.equal(pause?.step, 120);
    assert.deepEqual(pause?.figures.previousEvalChange, -2);
  });

  it('a pausing rule pauses once; resumed past, it warns until a clear step, then pauses again', () => {
    let state = emptyGuardState();
    let checked = guardStep(state, [EMPTY], point(1, { emptyShare: 0.5 }));
    assert.equal(checked.pause?.rule, 'empty');
    state = acknowledged(checked.state, checked.pause!);
    checked = guardStep(state, [EMPTY], point(2, { emptyShare: 0.6 }));
    assert.equal(checked.pause, null);
    assert.deepEqual(
      checked.warnings.map((w) => [w.rule, w.action]),
      [['empty', 'warn']],
    );
    checked = guardStep(checked.state, [EMPTY], point(3, { emptyShare: 0 }));
    assert.equal(checked.pause, null);
    checked = guardStep(checked.state, [EMPTY], point(4, { emptyShare: 0.9 }));
    assert.equal(checked.pause?.step, 4);
  });

  it('two pausing rules on one step: both are recorded as pauses, neither as resumed past', () => {
    const LONG: Guardrail = { kind: 'above', name: 'long', action: 'pause', signal: 'replyLengthMean', value: 100 };
    const both = (step: number) => point(step, { emptyShare: 0.5, replyLengthMean: 300 });
    const checked = guardStep(emptyGuardState(), [EMPTY, LONG], both(1));
    assert.equal(checked.pause?.rule, 'empty');
    assert.deepEqual(
      checked.alsoPausing.map((t) => [t.rule, t.action, t.message]),
      [['long', 'pause', 'guardrail long at step 1: replyLengthMean 300 above 100']],
    );
    assert.deepEqual(checked.warnings, [], 'nobody resumed past either rule');
    assert.deepEqual(checked.state.warnings, []);
    // resumed past the rule the run waited on: the other one still pauses, the resumed one warns
    const next = guardStep(acknowledged(checked.state, checked.pause!), [EMPTY, LONG], both(2));
    assert.equal(next.pause?.rule, 'long');
    assert.deepEqual(
      next.warnings.map((w) => [w.rule, w.action]),
      [['empty', 'warn']],
    );
    assert.match(next.warnings[0]!.message, /\(resumed past\)$/);
  });

  it('points come from step records; the defaults parse', () => {
    const record = {
      step: 3,
      reward: { mean: 0.4 },
      malformedRate: 0.25,
      signals: {
        replies: 4,
        replyLengthMean: 10,
        replyLengthStd: 1,
        emptyShare: 0,
        repetition: 0,
        distinctBigrams: 1,
        evalChange: -3,
      },
    } as unknown as StepMetricsRecord;
    assert.deepEqual(guardPointOf(record).signals, {
      reward: 0.4,
      malformedShare: 0.25,
      replyLengthMean: 10,
      replyLengthStd: 1,
      emptyShare: 0,
      repetition: 0,
      distinctBigrams: 1,
      evalChange: -3,
    });
    for (const rule of DEFAULT_GUARDRAILS) guardrailSchema.parse(rule);
    assert.throws(() =>
      guardrailSchema.parse({ kind: 'above', name: 'x', action: 'stop', signal: 'reward', value: 1 }),
    );
  });
});
