import assert from 'node:assert/strict';
import { Client, Connection, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { connectClient } from '../../src/temporal/connect.js';
import { freePort } from '../../src/temporal/devServer.js';
import { isTransientConnectionError } from '../../src/temporal/transientErrors.js';
import { sharedTestEnv } from '../support/temporalEnv.js';

/** What a call fails with, as the SDK throws it (no error is made up here). */
async function failureOf(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('the call did not fail');
}

describe('which errors mean a Temporal frontend that is away for now', () => {
  it('the SDK\'s "Failed to get Workflow execution history" over UNAVAILABLE, from a port nothing listens on', async () => {
    // No retry interceptor: the call fails at once, with what the default one throws after its last attempt.
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, interceptors: [] });
    try {
      const error = await failureOf(() => new Client({ connection }).workflow.getHandle('anything').result());
      assert.match(String(error), /Failed to get Workflow execution history/);
      assert.equal(isTransientConnectionError(error), true);
    } finally {
      await connection.close();
    }
  });

  it('a connection that never came up (refused), wrapped by connectClient', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const error = await failureOf(() => connectClient({ address }, 500));
    assert.match(String(error), /did not answer within 500 ms/);
    assert.equal(isTransientConnectionError(error), true);
  });

  it('a socket error of a server that went away', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    assert.equal(isTransientConnectionError(new Error('lost', { cause: refused })), true);
    const denied = Object.assign(new Error('open EACCES'), { code: 'EACCES' });
    assert.equal(isTransientConnectionError(denied), false);
  });

  it('not a workflow that is not found, nor one that was terminated', async () => {
    const env = await sharedTestEnv();
    const missing = await failureOf(() => env.client.workflow.getHandle(`missing-${Date.now()}`).result());
    assert.ok(missing instanceof WorkflowNotFoundError, String(missing));
    assert.equal(isTransientConnectionError(missing), false);

    // No worker polls this queue: the workflow waits until it is terminated.
    const handle = await env.client.workflow.start('rollout', {
      taskQueue: `nobody-${process.pid}-${Date.now()}`,
      workflowId: `terminated-${process.pid}-${Date.now()}`,
    });
    await handle.terminate('the test ends it');
    const terminated = await failureOf(() => handle.result());
    assert.ok(terminated instanceof WorkflowFailedError, String(terminated));
    assert.equal(isTransientConnectionError(terminated), false);
  });

  it('not a plain error, nor nothing', () => {
    assert.equal(isTransientConnectionError(new Error('run failed')), false);
    assert.equal(isTransientConnectionError(undefined), false);
    assert.equal(isTransientConnectionError('UNAVAILABLE'), false);
  });
});
