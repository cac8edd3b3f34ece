import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { steadyLink, type FrontendLink } from '../../src/client/frontendLink.js';
import { followTraining } from '../../src/client/trainingProgress.js';
import type { TrainingResult, TrainingStatus } from '../../src/workflows/training.js';

/** Just the two calls `followTraining` makes, with a result the test settles when it chooses. */
function fakeRun(statuses: (TrainingStatus | Error)[]) {
  let queries = 0;
  let end!: { resolve: (r: TrainingResult) => void; reject: (e: Error) => void };
  const result = new Promise<TrainingResult>((resolve, reject) => {
    end = { resolve, reject };
  });
  const handle = {
    result: () => result,
    query: async () => {
      const next = statuses[Math.min(queries++, statuses.length - 1)]!;
      if (next instanceof Error) throw next;
      return next;
    },
  };
  const client = { workflow: { getHandle: () => handle } } as unknown as Client;
  const link: FrontendLink = steadyLink(client);
  return { link, end, queries: () => queries };
}

const status = (step: number) => ({ step, steps: 3, phase: 'rollouts' }) as TrainingStatus;
const done = { runName: 'r', stepsApplied: 3, version: 'r@3', stopped: false } as TrainingResult;

describe('following a training run', () => {
  it('yields a status per poll, skips a failed query, and ends with the result', async () => {
    const fake = fakeRun([status(1), new Error('no poller'), status(2)]);
    const run = followTraining(fake.link, 'r', 10);
    const seen: number[] = [];
    for await (const s of run.statuses) {
      seen.push(s.step);
      if (seen.length === 2) fake.end.resolve(done);
    }
    assert.deepEqual(seen, [1, 2], 'the failed query is skipped, nothing follows the end');
    assert.equal(fake.queries(), 3);
    assert.deepEqual(await run.result, done);
  });

  it('ends as soon as the run ends, not a poll interval later', async () => {
    const fake = fakeRun([status(1)]);
    const started = Date.now();
    const run = followTraining(fake.link, 'r', 60_000);
    setTimeout(() => fake.end.resolve(done), 20);
    for await (const _ of run.statuses) assert.fail('no poll is due before the run ends');
    assert.deepEqual(await run.result, done);
    assert.ok(Date.now() - started < 30_000);
    assert.equal(fake.queries(), 0);
  });

  it('ends when the run fails, and its result rejects with the failure', async () => {
    const fake = fakeRun([status(1)]);
    const run = followTraining(fake.link, 'r', 10);
    const seen: number[] = [];
    for await (const s of run.statuses) {
      seen.push(s.step);
      fake.end.reject(new Error('run failed'));
    }
    assert.deepEqual(seen, [1]);
    await assert.rejects(run.result, /run failed/);
  });
});
