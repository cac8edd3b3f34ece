import assert from 'node:assert/strict';
import { liveWorkerCount, shareOf } from '../../src/core/workerShare.js';

describe('worker share of the endpoint limits', () => {
  const now = 1_000_000;
  it('counts distinct identities seen polling within the window, this worker always among them', () => {
    const pollers = [
      { identity: 'a', lastAccessMs: now - 1_000 },
      { identity: 'a', lastAccessMs: now - 2_000 },
      { identity: 'b', lastAccessMs: now - 60_000 },
      { identity: 'dead', lastAccessMs: now - 90_000 },
      { identity: 'silent', lastAccessMs: undefined },
    ];
    assert.equal(liveWorkerCount(pollers, 'a', now, 75_000), 2);
    assert.equal(liveWorkerCount(pollers, 'self', now, 75_000), 3);
    assert.equal(liveWorkerCount([], 'self', now, 75_000), 1, 'the server has not seen this worker yet');
  });

  it('splits rates evenly and concurrency rounded down, never below one call per worker', () => {
    assert.deepEqual(shareOf({ maxConcurrency: 8, requestsPerSecond: 20, tokensPerMinute: 600 }, 4), {
      maxConcurrency: 2,
      requestsPerSecond: 5,
      tokensPerMinute: 150,
      exceeds: false,
    });
    assert.deepEqual(shareOf({ maxConcurrency: 3 }, 2), { maxConcurrency: 1, exceeds: false });
    assert.deepEqual(shareOf({ maxConcurrency: 2 }, 3), { maxConcurrency: 1, exceeds: true });
    assert.deepEqual(shareOf({ maxConcurrency: 4, requestsPerSecond: 2 }, 1), {
      maxConcurrency: 4,
      requestsPerSecond: 2,
      exceeds: false,
    });
  });
});
