import assert from 'node:assert/strict';
import { estimateRequestTokens, TokenBucket } from '../../src/core/tokenBucket.js';

describe('tokens-per-minute bucket', () => {
  it('starts empty and earns tokens at the rate, up to one minute of them', () => {
    const bucket = new TokenBucket(600, 0);
    assert.equal(bucket.available(0), 0);
    assert.equal(bucket.available(1000), 10);
    assert.equal(bucket.available(120_000), 600);
  });

  it('tells each call how long to wait, in the order they asked', () => {
    const bucket = new TokenBucket(6000, 0); // 100 tokens a second
    assert.equal(bucket.reserve(50, 0), 500);
    assert.equal(bucket.reserve(50, 0), 1000, 'the second call queues behind the first');
    assert.equal(bucket.reserve(100, 2000), 0, 'after 2 s the debt is paid and 100 tokens earned');
  });

  it('settles the estimate with the real usage', () => {
    const bucket = new TokenBucket(6000, 0);
    bucket.reserve(300, 0);
    bucket.settle(300, 100, 0);
    assert.equal(bucket.available(0), -100);
    bucket.settle(0, 50, 0);
    assert.equal(bucket.available(0), -150, 'a call that used more than it reserved takes the rest');
    bucket.settle(10_000, 0, 0);
    assert.equal(bucket.available(0), 6000, 'never more than a minute of tokens');
  });

  it('estimates a request as prompt chars / 4 plus max_tokens', () => {
    assert.equal(estimateRequestTokens([{ content: 'abcd' }, { content: 'efghi' }], 100), 103);
  });
});
