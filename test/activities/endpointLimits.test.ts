import assert from 'node:assert/strict';
import { EndpointGate, gated } from '../../src/activities/endpointLimits.js';

/** A call that stays open until the test lets it finish. */
function heldCall() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return { done, finish };
}

describe('endpoint gate (limits for LLM calls run as local activities)', () => {
  it('never lets more than maxConcurrency calls run at once, and runs every call', async () => {
    const gate = new EndpointGate({ maxConcurrency: 2 });
    const calls = Array.from({ length: 5 }, () => heldCall());
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const results = calls.map((c, i) =>
      gate.run(async () => {
        running++;
        peak = Math.max(peak, running);
        started.push(i);
        await c.done;
        running--;
        return i;
      }),
    );
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started, [0, 1]);
    calls[1]!.finish();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started, [0, 1, 2], 'a finished call hands its slot to the next in line');
    for (const c of calls) c.finish();
    assert.deepEqual(await Promise.all(results), [0, 1, 2, 3, 4]);
    assert.equal(peak, 2);
    assert.equal(gate.inFlight, 0);
  });

  it('frees the slot when a call fails', async () => {
    const gate = new EndpointGate({ maxConcurrency: 1 });
    await assert.rejects(
      gate.run(async () => {
        throw new Error('HTTP 500');
      }),
      /HTTP 500/,
    );
    assert.equal(await gate.run(async () => 'next'), 'next');
    assert.equal(gate.inFlight, 0);
  });

  it('spaces call starts by 1 / requestsPerSecond', async () => {
    const gate = new EndpointGate({ maxConcurrency: 10, requestsPerSecond: 20 });
    const startedAt: number[] = [];
    await Promise.all(
      Array.from({ length: 4 }, () =>
        gate.run(async () => {
          startedAt.push(Date.now());
        }),
      ),
    );
    const span = startedAt[3]! - startedAt[0]!;
    // Three gaps of 50 ms; timers may fire a little late, never early.
    assert.ok(span >= 148, `4 starts at 20 rps spanned ${span} ms`);
  });

  it('gated() wraps every activity of a set and keeps its arguments and result', async () => {
    const gate = new EndpointGate({ maxConcurrency: 1 });
    const activities = gated({ add: async (a: number, b: number) => a + b, echo: async (s: string) => s }, gate);
    assert.equal(await activities.add(2, 3), 5);
    assert.equal(await activities.echo('x'), 'x');
  });

  it('shareWith: a smaller share takes effect as calls end, a larger one lets waiters in at once', async () => {
    const rated = new EndpointGate({ maxConcurrency: 4, requestsPerSecond: 10 });
    rated.shareWith(2);
    assert.deepEqual(rated.current, { maxConcurrency: 2, requestsPerSecond: 5 });

    const gate = new EndpointGate({ maxConcurrency: 4 });
    const calls = Array.from({ length: 6 }, () => heldCall());
    const started: number[] = [];
    const results = calls.map((c, i) =>
      gate.run(async () => {
        started.push(i);
        await c.done;
      }),
    );
    const settle = () => new Promise((r) => setImmediate(r));
    await settle();
    assert.deepEqual(started, [0, 1, 2, 3]);
    gate.shareWith(2);
    for (const i of [0, 1]) {
      calls[i]!.finish();
      await results[i];
    }
    await settle();
    assert.deepEqual(started, [0, 1, 2, 3], 'the freed slots were given up down to the share, none passed on');
    assert.equal(gate.inFlight, 2);
    calls[2]!.finish();
    await results[2];
    await settle();
    assert.deepEqual(started, [0, 1, 2, 3, 4], 'within the share a slot passes on again');
    gate.shareWith(1);
    await settle();
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5], 'a larger share let the waiter in at once');
    assert.equal(gate.inFlight, 3);
    for (const c of calls) c.finish();
    await Promise.all(results);
    assert.equal(gate.inFlight, 0);
  });
});
