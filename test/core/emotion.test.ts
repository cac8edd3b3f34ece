import assert from 'node:assert/strict';
import { clampChange, emotionAfterTurn, emotionState, stateEndsDialogue } from '../../src/core/emotion.js';
import { isGoodbye, outcomeAfterAnalysis, rewardFor } from '../../src/core/termination.js';

describe('emotion state machine', () => {
  it('maps emotion to SAGE states at the exact thresholds', () => {
    assert.deepEqual([100, 99, 70, 69, 40, 39, 10, 9, 0].map(emotionState), [
      'S',
      'A',
      'A',
      'B',
      'B',
      'C',
      'C',
      'F',
      'F',
    ]);
  });
  it('clamps the change to [-10, 10] (rounded) and the emotion to [0, 100]', () => {
    assert.equal(clampChange(15), 10);
    assert.equal(clampChange(-12.4), -10);
    assert.equal(clampChange(2.6), 3);
    assert.equal(emotionAfterTurn(95, 10), 100);
    assert.equal(emotionAfterTurn(3, -10), 0);
    assert.equal(emotionAfterTurn(40, 25), 50);
  });
  it('ends the dialogue in S and F only', () => {
    assert.deepEqual((['S', 'A', 'B', 'C', 'F'] as const).map(stateEndsDialogue), [true, false, false, false, true]);
  });
});

describe('termination', () => {
  it('success at 100, failure below 10, turn limit, else continue', () => {
    assert.equal(outcomeAfterAnalysis(100, 1, 8), 'success');
    assert.equal(outcomeAfterAnalysis(9, 1, 8), 'failure');
    assert.equal(outcomeAfterAnalysis(10, 1, 8), null);
    assert.equal(outcomeAfterAnalysis(50, 8, 8), 'turn-limit');
    assert.equal(outcomeAfterAnalysis(50, 7, 8), null);
    // Success beats the turn limit on the last turn.
    assert.equal(outcomeAfterAnalysis(100, 8, 8), 'success');
  });
  it('recognises goodbyes in English and Chinese, not mere mentions', () => {
    for (const text of [
      'ok bye.',
      'Goodbye then',
      'I have to go, take care',
      'see you later',
      '好的，再见',
      '那先这样吧，拜拜',
    ]) {
      assert.equal(isGoodbye(text, text.match(/[\u4e00-\u9fff]/) ? 'zh' : 'en'), true, text);
    }
    for (const text of ['I said nothing about it', 'maybe', 'the bypass road', '我还想再聊聊']) {
      assert.equal(isGoodbye(text, 'en'), false, text);
    }
  });
  it('rewards final emotion / 100, and 0 for malformed output', () => {
    assert.equal(rewardFor('turn-limit', 63), 0.63);
    assert.equal(rewardFor('success', 100), 1);
    assert.equal(rewardFor('malformed', 40), 0);
  });
});
