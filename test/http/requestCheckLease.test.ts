import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Socket, type AddressInfo } from 'node:net';
import { LIMITS } from '../../src/config/limits.js';
import { requestCheckLeaseMs } from '../../src/core/requestCheckLease.js';
import { dialogueBounds } from '../../src/core/rolloutSettingsSchema.js';
import { beforeRequest, fetchAfterCheck } from '../../src/http/beforeRequest.js';

/** Freezes this process for `ms`, as SIGSTOP freezes a worker: no event, no timer, no I/O meanwhile. */
function frozenFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe('a local turn’s check before its request holds for a lease: a worker stopped in between sends nothing (src/http/beforeRequest.ts)', () => {
  let server: Server;
  let url = '';
  let received = 0;
  before(async () => {
    server = createServer((req, res) => {
      received++;
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => (received = 0));

  const post = () => fetchAfterCheck(url, { method: 'POST', body: '{"model":"m"}' });

  it('sends a request whose check is within its lease once, after one check', async () => {
    let checks = 0;
    const check = async () => void checks++;
    const response = await beforeRequest.run({ check, leaseMs: 10_000 }, post);
    assert.equal(response.status, 200);
    assert.deepEqual([checks, received], [1, 1]);
  });

  it('checks again when the worker was stopped past the lease after its check, and sends nothing once a newer attempt has taken the turn', async () => {
    let checks = 0;
    const check = async () => {
      checks++;
      if (checks === 1)
        frozenFor(300); // stopped right after confirming; meanwhile another worker took over
      else throw new Error('a newer attempt claimed the turn journal: this attempt stops');
    };
    await assert.rejects(beforeRequest.run({ check, leaseMs: 100 }, post), /a newer attempt claimed/);
    assert.equal(checks, 2, 'checked again on waking');
    assert.equal(received, 0, 'the request never left');
  });

  it('sends the request after checking again when no attempt took over, on the same connection pool', async () => {
    let checks = 0;
    const check = async () => {
      checks++;
      if (checks === 1) frozenFor(300);
    };
    const response = await beforeRequest.run({ check, leaseMs: 100 }, post);
    assert.equal(response.status, 200);
    assert.deepEqual([checks, received], [2, 1], 'one request, sent under the second check');
  });

  it(`fails, naming the stall, when ${LIMITS.requestCheckTries} checks in a row outlive their lease; nothing is sent`, async () => {
    let checks = 0;
    const check = async () => {
      checks++;
      frozenFor(60);
    };
    await assert.rejects(beforeRequest.run({ check, leaseMs: 50 }, post), /checks in a row outlived their 50 ms lease/);
    assert.deepEqual([checks, received], [LIMITS.requestCheckTries, 0]);
  });

  it('writes the request in the same step as the lease’s last look: a worker frozen right after that look has sent it already, not on waking', async () => {
    // undici announces a request's head synchronously after its handler's onConnect, where the lease is
    // looked at last; the freeze is queued there, so it lands after that look and before anything
    // else runs (with fetch's streamed body, before the head is written).
    const onHead = () => queueMicrotask(() => frozenFor(300));
    const port = (server.address() as AddressInfo).port;
    let checkedAt = 0;
    const written: number[] = [];
    const write = Socket.prototype.write;
    Socket.prototype.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
      if (this.remotePort === port && String(args[0]).startsWith('POST ')) written.push(performance.now() - checkedAt);
      return write.apply(this, args);
    } as Socket['write'];
    subscribe('undici:client:sendHeaders', onHead);
    try {
      const check = async () => void (checkedAt = performance.now());
      assert.equal((await beforeRequest.run({ check, leaseMs: 200 }, post)).status, 200);
    } finally {
      unsubscribe('undici:client:sendHeaders', onHead);
      Socket.prototype.write = write;
    }
    assert.equal(written.length, 1, 'the request was written once');
    assert.ok(written[0]! < 200, `written ${Math.round(written[0]!)} ms after its check, past its 200 ms lease`);
  });

  it('a call with no check set goes out as before', async () => {
    assert.equal((await post()).status, 200);
    assert.equal(received, 1);
  });

  it('the lease is a tenth of the rollouts’ workflow-task timeout: half the earliest a takeover can come (a fifth), for every timeout the config accepts', () => {
    assert.equal(requestCheckLeaseMs(20_000), 2_000);
    assert.equal(requestCheckLeaseMs(undefined), 1_000, "Temporal's 10 s when none is set");
    const min = dialogueBounds.workflowTaskTimeoutMs.minValue!;
    assert.ok(requestCheckLeaseMs(min) > 0 && requestCheckLeaseMs(min) <= min / 10, String(requestCheckLeaseMs(min)));
  });
});
