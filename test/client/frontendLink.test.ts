import assert from 'node:assert/strict';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { reconnectDelayMs, reconnectingLink, RECONNECT_SCHEDULE } from '../../src/client/frontendLink.js';
import { followWorkflow } from '../../src/client/workflowFollowing.js';
import { createLogger } from '../../src/log.js';
import { freePort } from '../../src/temporal/devServer.js';

/** A real "frontend away" error, as the SDK throws it: a call to a port nothing listens on, without retries. */
async function unavailable(): Promise<unknown> {
  const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, interceptors: [] });
  try {
    await new Client({ connection }).workflow.getHandle('anything').result();
  } catch (error) {
    return error;
  } finally {
    await connection.close();
  }
  throw new Error('a call to a closed port answered');
}

function recordingLog() {
  const lines: { msg: string; fields: Record<string, unknown> }[] = [];
  const log = createLogger(
    {},
    'info',
    (line) => {
      const record = JSON.parse(line) as { msg: string } & Record<string, unknown>;
      lines.push({ msg: record.msg, fields: record });
    },
    'json',
  );
  return { log, lines };
}

/** Clients told apart by name: the link's calls say which one they were made on. */
const clientNamed = (name: string) => ({ name }) as unknown as Client;
const nameOf = (client: Client) => (client as unknown as { name: string }).name;

describe('following a workflow through a lost Temporal frontend', () => {
  it('reconnects after a transient error, logs each wait, and asks again on the new client', async () => {
    const lost = await unavailable();
    const { log, lines } = recordingLog();
    let tries = 0;
    const link = reconnectingLink({
      client: clientNamed('first'),
      address: '127.0.0.1:7233',
      // Two tries find the frontend still away; the third reaches it.
      connect: async () => {
        tries++;
        if (tries < 3) throw lost;
        return { client: clientNamed('second'), close: async () => undefined };
      },
      log,
      delayMs: () => 5,
    });
    const asked: string[] = [];
    const run = followWorkflow(
      link,
      {
        result: async (client) => {
          asked.push(nameOf(client));
          if (nameOf(client) === 'first') throw lost;
          return 'done';
        },
        query: () => Promise.reject(new Error('no status while away')),
      },
      60_000,
    );
    assert.equal(await run.result, 'done');
    assert.deepEqual(asked, ['first', 'second']);
    assert.equal(tries, 3);
    const waits = lines.filter((l) => l.msg.startsWith('lost the Temporal frontend'));
    assert.deepEqual(
      waits.map((l) => l.msg),
      Array(3).fill('lost the Temporal frontend at 127.0.0.1:7233, following again in 1 s'),
    );
    assert.deepEqual(
      waits.map((l) => l.fields.attempt),
      [1, 2, 3],
    );
    assert.match(String(waits[0]!.fields.error), /UNAVAILABLE/);
    assert.ok(lines.some((l) => l.msg === 'reached the Temporal frontend at 127.0.0.1:7233 again: following on'));
    for await (const _ of run.statuses) assert.fail('the run has ended');
  });

  it('ends at once with a failure of the workflow: no reconnecting', async () => {
    const { log, lines } = recordingLog();
    let connects = 0;
    const link = reconnectingLink({
      client: clientNamed('first'),
      address: '127.0.0.1:7233',
      connect: () => {
        connects++;
        return Promise.reject(new Error('not asked'));
      },
      log,
      delayMs: () => 5,
    });
    const missing = new WorkflowNotFoundError('no such workflow', 'train-x', undefined);
    const run = followWorkflow(link, { result: () => Promise.reject(missing), query: () => new Promise(() => {}) }, 10);
    await assert.rejects(run.result, (error) => error === missing);
    assert.equal(connects, 0);
    assert.deepEqual(lines, []);
  });

  it('gives up with the lost error once the command stops (Ctrl-C), and when a reconnect fails for good', async () => {
    const lost = await unavailable();
    const stopped = new AbortController();
    const { log } = recordingLog();
    const link = reconnectingLink({
      client: clientNamed('first'),
      address: '127.0.0.1:7233',
      connect: () => Promise.reject(lost),
      log,
      signal: stopped.signal,
      delayMs: () => 60_000,
    });
    const regained = link.regain(lost);
    stopped.abort();
    await assert.rejects(regained, (error) => error === lost);

    const refused = new Error('PERMISSION_DENIED: bad API key');
    const keyless = reconnectingLink({
      client: clientNamed('first'),
      address: '127.0.0.1:7233',
      connect: () => Promise.reject(refused),
      log,
      delayMs: () => 5,
    });
    await assert.rejects(keyless.regain(lost), (error) => error === refused);
  });

  it('waits 1 s, doubling to 10 s, with no last try', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 50].map(reconnectDelayMs), [
      1000,
      2000,
      4000,
      8000,
      10_000,
      10_000,
      RECONNECT_SCHEDULE.maxMs,
    ]);
  });
});
