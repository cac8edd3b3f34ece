import assert from 'node:assert/strict';
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { carriedWait, lastErrorOf, operatorFixable, waitingDetails, waitingReason } from '../../src/core/outageWait.js';

/** An activity's failure as the workflow sees it once the retries ran out. */
function activityFailed(cause: Error): ActivityFailure {
  return new ActivityFailure(
    'activity failed',
    'analyzeAssistantReply',
    '7',
    RetryState.MAXIMUM_ATTEMPTS_REACHED,
    undefined,
    cause,
  );
}

describe('outage waits: which failed calls wait for an operator', () => {
  it('waits on timeouts, 429, 5xx and an unreachable endpoint', () => {
    for (const type of ['LlmTimeout', 'LlmUnreachable', 'LlmRateLimited', 'LlmServerError'])
      assert.ok(operatorFixable(activityFailed(ApplicationFailure.retryable('x', type))), type);
    assert.ok(
      operatorFixable(activityFailed(new TimeoutFailure('start-to-close', undefined, TimeoutType.START_TO_CLOSE))),
    );
  });

  it('fails on a rejected request, an unparseable reply, a bad response and anything else', () => {
    for (const type of ['LlmRequestRejected', 'UnparseableSimulatorOutput', 'LlmBadResponse', 'ArtifactStoreFull'])
      assert.ok(!operatorFixable(activityFailed(ApplicationFailure.nonRetryable('x', type))), type);
    assert.ok(!operatorFixable(new Error('plain')));
  });

  it('names the last error, the call, the endpoint and how many dialogues wait', () => {
    const error = activityFailed(
      ApplicationFailure.retryable('simulator endpoint http://s/v1: HTTP 500', 'LlmServerError'),
    );
    assert.equal(lastErrorOf(error), 'simulator endpoint http://s/v1: HTTP 500');
    const wait = {
      rolloutId: 'r1',
      call: 'turn 3 · user reply',
      endpoint: 'http://s/v1 (model "m")',
      lastError: 'HTTP 500',
    };
    assert.match(
      waitingDetails(wait, 60),
      /at turn 3 · user reply\n\*\*endpoint\*\* http:\/\/s\/v1 \(model "m"\)\n\*\*last error\*\* HTTP 500/,
    );
    assert.match(waitingReason([wait]), /^1 dialogue waits for an operator .*r1 at turn 3 · user reply/);
    assert.match(waitingReason([wait, { ...wait, rolloutId: 'r2' }]), /^2 dialogues wait for an operator/);
    assert.equal(waitingReason([]), '');
  });

  it('carries a wait to the next run with its last error cut to the bound, the rest as it was', () => {
    const wait = {
      rolloutId: 'r1',
      call: 'turn 3 · user reply',
      endpoint: 'http://sim/v1 (model "m")',
      lastError: 'x'.repeat(600),
    };
    const carried = carriedWait(wait, 500);
    assert.equal(carried.lastError, `${'x'.repeat(500)}…`);
    assert.deepEqual({ ...carried, lastError: wait.lastError }, wait);
    const short = { ...wait, lastError: 'HTTP 500' };
    assert.equal(carriedWait(short, 500), short);
  });
});
