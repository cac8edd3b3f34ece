import assert from 'node:assert/strict';
import { idleShare } from '../../bench/learning/policyIdle.js';

describe("bench:learning's policy idle share", () => {
  it('counts overlapping calls once and clips them to the window', () => {
    const spans = [
      { arrivedAtMs: 0, answeredAtMs: 30 },
      { arrivedAtMs: 20, answeredAtMs: 40 },
      { arrivedAtMs: 60, answeredAtMs: 70 },
      { arrivedAtMs: 90, answeredAtMs: 200 },
    ];
    // Busy 10-40, 60-70, 90-100 of 10-100: 50 of 90.
    assert.equal(idleShare(spans, 10, 100), 40 / 90);
  });

  it('is 1 for a window no call touched and 0 for an empty one', () => {
    assert.equal(idleShare([{ arrivedAtMs: 0, answeredAtMs: 5 }], 10, 20), 1);
    assert.equal(idleShare([], 10, 10), 0);
  });

  it('counts a call nested in another once', () => {
    const spans = [
      { arrivedAtMs: 0, answeredAtMs: 100 },
      { arrivedAtMs: 10, answeredAtMs: 20 },
    ];
    assert.equal(idleShare(spans, 0, 200), 0.5);
  });
});
