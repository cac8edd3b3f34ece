import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  changesFromEmotions,
  creditedRewards,
  discountedReturns,
  FINAL_CREDIT,
  turnRewards,
  type CreditMode,
  type CreditSettings,
} from '../../src/core/training/credit.js';
import type { TrainerStepMetrics } from '../../src/core/runMetrics.js';
import { samplesFromTranscript, trainerCredit } from '../../src/core/training/samples.js';
import { stepMetricsRecord } from '../../src/core/training/stepRecord.js';
import type { Transcript } from '../../src/core/transcript.js';
import { REPO_ROOT } from '../../src/paths.js';

const GOLDEN = 'trainer/tests/fixtures/turn_credit_golden.json';

const close = (actual: number[], expected: number[]) => {
  assert.equal(actual.length, expected.length);
  actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]!) < 1e-12, `${a} != ${expected[i]} at ${i}`));
};
const TURN: CreditSettings = { mode: 'turn', turnDiscount: 1, weight: 0.5 };

/** A hand-made dialogue: starts at 30, turns move the emotion by +20, -10, +40, ends at 80 (reward 0.8). */
const rising = { changes: [20, -10, 40], reward: 0.8, finalEmotion: 80 };
/** Up 10, then a malformed reply ends it at 40 with reward 0. */
const malformed = { changes: [10, 0], reward: 0, finalEmotion: 40 };

function transcript(id: string, before: number, changes: number[], reward: number): Transcript {
  let emotion = before;
  const turns = changes.map((c, i) => {
    const t = { turn: i + 1, promptMessages: [{ role: 'user', content: `u${i}` }], emotionBefore: emotion };
    emotion += c;
    return { ...t, emotionAfter: emotion, policy: { raw: `r${i}`, tokens: 'retokenized' } };
  });
  return { rolloutId: id, reward, finalEmotion: emotion, turns } as unknown as Transcript;
}

describe('credit by turn', () => {
  it('each turn is rewarded with its emotion change / 100; a malformed ending pays on the last turn', () => {
    close(turnRewards(rising), [0.2, -0.1, 0.4]);
    close(turnRewards(malformed), [0.1, -0.4]);
  });

  it('returns are the discounted sums from each turn to the end', () => {
    close(discountedReturns([0.2, -0.1, 0.4], 1), [0.5, 0.3, 0.4]);
    close(discountedReturns([0.2, -0.1, 0.4], 0.5), [0.25, 0.1, 0.4]);
    close(discountedReturns([0.2, -0.1, 0.4], 0), [0.2, -0.1, 0.4]);
    // undiscounted, the first turn's return is the reward less the initial emotion / 100
    close(creditedRewards(rising, TURN).slice(0, 1), [0.8 - 0.3]);
  });

  it('final gives every turn the dialogue reward; mixed weighs the two', () => {
    close(creditedRewards(rising, FINAL_CREDIT), [0.8, 0.8, 0.8]);
    close(creditedRewards(malformed, TURN), [-0.3, -0.4]);
    close(creditedRewards(rising, { mode: 'mixed', turnDiscount: 1, weight: 0.25 }), [0.725, 0.675, 0.7]);
  });

  it('changes from a summary: an unanalysed (malformed) last turn changed nothing', () => {
    assert.deepEqual(changesFromEmotions([30, 50, 40, 80], 3), [20, -10, 40]);
    assert.deepEqual(changesFromEmotions([30, 40], 2), [10, 0]);
  });

  it('samples carry the dialogue reward, its id and each turn, for the trainer to credit', () => {
    const t = transcript('d1', 30, rising.changes, 0.8);
    assert.deepEqual(
      samplesFromTranscript(t, 'g').map((s) => [s.reward, s.trajectory, s.turn]),
      [
        [0.8, 'd1', { index: 0, emotion_change: 20, final_emotion: 80 }],
        [0.8, 'd1', { index: 1, emotion_change: -10, final_emotion: 80 }],
        [0.8, 'd1', { index: 2, emotion_change: 40, final_emotion: 80 }],
      ],
    );
    assert.deepEqual(trainerCredit({ mode: 'mixed', turnDiscount: 0.9, weight: 0.25 }), {
      mode: 'mixed',
      turn_discount: 0.9,
      weight: 0.25,
    });
  });

  it("the step record's credited rewards are the trainer's (its golden fixture)", () => {
    // The trainer credits the samples it trains on; the step record recomputes the same rewards
    // for its statistics. Both are held to one recording (trainer/tests/test_turn_credit_golden.py).
    const golden = JSON.parse(readFileSync(join(REPO_ROOT, GOLDEN), 'utf8')) as {
      dialogues: { reward: number; final_emotion: number; turns: { emotion_change: number }[] }[];
      cases: { credit: { mode: CreditMode; turn_discount: number; weight: number }; rewards: number[] }[];
    };
    assert.equal(golden.cases.length, 5);
    for (const c of golden.cases) {
      const credit = { mode: c.credit.mode, turnDiscount: c.credit.turn_discount, weight: c.credit.weight };
      const rewards = golden.dialogues.flatMap((d) =>
        creditedRewards(
          { changes: d.turns.map((t) => t.emotion_change), reward: d.reward, finalEmotion: d.final_emotion },
          credit,
        ),
      );
      assert.deepEqual(rewards, c.rewards, JSON.stringify(c.credit));
    }
  });

  it('the step record carries per-turn reward and return statistics', () => {
    const record = stepMetricsRecord({
      runName: 'run',
      step: 1,
      algorithm: 'grpo',
      time: '2025-01-01T00:00:00.000Z',
      policyVersion: 'run@0',
      kept: [
        { ...rising, outcome: 'success', turns: 3 },
        { ...malformed, outcome: 'malformed', turns: 2 },
      ],
      failed: 0,
      dropped: 0,
      trainer: { loss: 0 } as TrainerStepMetrics,
      credit: TURN,
    });
    assert.ok(record.turnReward && record.turnReturn);
    close([record.turnReward.mean, record.turnReward.min, record.turnReward.max], [0.2 / 5, -0.4, 0.4]);
    close([record.turnReturn.mean, record.turnReturn.min, record.turnReturn.max], [0.5 / 5, -0.4, 0.5]);
    const final = stepMetricsRecord({
      runName: 'run',
      step: 1,
      algorithm: 'grpo',
      time: '2025-01-01T00:00:00.000Z',
      policyVersion: 'run@0',
      kept: [{ ...rising, outcome: 'success', turns: 3 }],
      failed: 0,
      dropped: 0,
      trainer: { loss: 0 } as TrainerStepMetrics,
    });
    assert.ok(final.turnReturn);
    close([final.turnReturn.mean, final.turnReturn.std, final.turnReturn.min], [0.8, 0, 0.8]);
  });
});
