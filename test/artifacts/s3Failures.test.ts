import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { createArtifactActivities } from '../../src/activities/artifacts.js';
import { s3Failure } from '../../src/artifacts/s3Failures.js';
import { S3ArtifactStore } from '../../src/artifacts/s3Store.js';
import {
  ArtifactStoreCallError,
  ArtifactStoreRejectedError,
  ArtifactStoreUnreachableError,
} from '../../src/artifacts/storeErrors.js';
import { freePort } from '../../src/temporal/devServer.js';
import { makeTranscript } from '../report/fixtures.js';

const CONTEXT = { endpoint: 'http://127.0.0.1:9', action: 'writing', url: 's3://attune/x/k.json', bucket: 'attune' };

const transcript = makeTranscript(
  {
    id: 's3-fail',
    name: 'Kim',
    goalType: 'venting',
    personality: 'negative',
    emotions: [40, 45],
    outcome: 'turn-limit',
  },
  'fail',
);

function storeAt(endpoint: string, env: NodeJS.ProcessEnv): S3ArtifactStore {
  return new S3ArtifactStore({
    location: { bucket: 'attune', prefix: 'failures' },
    endpoint,
    region: 'us-east-1',
    pathStyle: true,
    env,
    maxAttempts: 1,
    connectionTimeoutMs: 2000,
  });
}

/** An environment whose credential lookup has a defect: reading the key id throws a TypeError. */
function brokenEnv(): NodeJS.ProcessEnv {
  return new Proxy({} as NodeJS.ProcessEnv, {
    get: function readCredentialWithDefect(_target, name) {
      if (name === 'AWS_ACCESS_KEY_ID') throw new TypeError('cannot read the key id (a defect)');
      return undefined;
    },
  });
}

describe('S3 failures: only the network counts as unreachable', () => {
  it('network errors without an answer are unreachable: refused, reset, socket hang-up, timeouts', () => {
    const network = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      Object.assign(new Error('getaddrinfo ENOTFOUND s3.example'), { code: 'ENOTFOUND' }),
      Object.assign(new Error('connect EHOSTUNREACH'), { code: 'EHOSTUNREACH' }),
      Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' }),
      Object.assign(new Error('Connection timed out after 5000 ms'), { name: 'TimeoutError' }),
      Object.assign(new Error('network failed'), { name: 'NetworkingError' }),
      new Error('request failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) }),
    ];
    for (const error of network) {
      const failure = s3Failure(error, CONTEXT);
      assert.ok(failure instanceof ArtifactStoreUnreachableError, `${error.message}: ${failure.name}`);
    }
  });

  it('any other error without an answer fails at once, naming the endpoint and object and keeping its stack', () => {
    for (const error of [new TypeError("Cannot read properties of undefined (reading 'x')"), new Error('boom')]) {
      const failure = s3Failure(error, CONTEXT);
      assert.ok(failure instanceof ArtifactStoreCallError, `${error.message}: ${failure.name}`);
      assert.equal(failure.cause, error);
      assert.ok(failure.message.includes(CONTEXT.endpoint) && failure.message.includes(CONTEXT.url), failure.message);
      assert.ok(failure.stack?.includes(error.stack!), failure.stack);
    }
    // An answer with a status keeps its meaning: 5xx is the store's outage, 400 a refusal.
    const answered = (status: number) => Object.assign(new Error('answer'), { $metadata: { httpStatusCode: status } });
    assert.ok(s3Failure(answered(503), CONTEXT) instanceof ArtifactStoreUnreachableError);
    assert.ok(s3Failure(answered(400), CONTEXT) instanceof ArtifactStoreRejectedError);
  });

  it('a TypeError thrown inside a store call fails the transcript write at once (non-retryable), its stack kept', async () => {
    const store = storeAt(`http://127.0.0.1:${await freePort()}`, brokenEnv());
    try {
      await assert.rejects(createArtifactActivities(store).saveTranscript(transcript), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure, String(error));
        assert.equal(error.type, 'ArtifactStoreCallFailed', error.message);
        assert.equal(error.nonRetryable, true);
        assert.match(error.message, /failed in this process, not at the store/);
        assert.ok(error.message.includes(store.locate(`rollouts/${transcript.runName}`)), error.message);
        assert.ok(error.cause instanceof TypeError, String(error.cause));
        assert.match(error.cause.stack ?? '', /readCredentialWithDefect/);
        return true;
      });
    } finally {
      store.close();
    }
  });

  it('a refused connection is still unreachable: retryable, naming the endpoint', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const store = storeAt(endpoint, { AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's' });
    try {
      await assert.rejects(createArtifactActivities(store).saveTranscript(transcript), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure, String(error));
        assert.equal(error.type, 'ArtifactStoreUnreachable', error.message);
        assert.equal(error.nonRetryable, false);
        assert.ok(
          error.message.startsWith(`the object store at ${endpoint} is unreachable while writing`),
          error.message,
        );
        assert.match(error.message, /ECONNREFUSED/);
        return true;
      });
    } finally {
      store.close();
    }
  });
});
