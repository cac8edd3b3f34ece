import assert from 'node:assert/strict';
import { ruleBasedEmotionChange } from '../../src/core/ruleBasedUser.js';
import { turnDifferentiatedEmotionChange } from '../../src/core/turnDifferentiatedUser.js';

describe('the turn-differentiated rule-based user', () => {
  it('scores the same reply differently before and after the user feels heard', () => {
    const short = 'x'.repeat(10);
    const long = 'x'.repeat(200);
    // before: brevity pays, length costs, as the plain rule
    assert.equal(turnDifferentiatedEmotionChange(short, 1), ruleBasedEmotionChange(short));
    assert.equal(turnDifferentiatedEmotionChange(short, 1), 10);
    assert.equal(turnDifferentiatedEmotionChange(long, 1), -10);
    // after: length is neutral
    assert.equal(turnDifferentiatedEmotionChange(short, 2), 0);
    assert.equal(turnDifferentiatedEmotionChange(long, 2), 0);
    assert.equal(turnDifferentiatedEmotionChange(long, 3, { targetChars: 64, charsPerPoint: 3, heardAfterTurn: 2 }), 0);
    assert.equal(
      turnDifferentiatedEmotionChange(long, 2, { targetChars: 64, charsPerPoint: 3, heardAfterTurn: 2 }),
      -10,
    );
  });

  it('keeps the empty reply the worst in every turn', () => {
    for (const turn of [1, 2, 5]) assert.equal(turnDifferentiatedEmotionChange(' ', turn), -10);
  });
});
