import { strict as assert } from 'node:assert';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseOptions } from '../../bench/pipeline/options.js';
import { VllmFacade } from '../../bench/pipeline/vllmFacade.js';

/** A chat-completions target that holds every request until the test answers it, counting how many it holds at once. */
class HoldingTarget {
  readonly held: ServerResponse[] = [];
  /** The `n` of each request, in the order they reached the target. */
  readonly order: number[] = [];
  mostAtOnce = 0;
  private arrived: (() => void) | null = null;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<HoldingTarget> {
    let target: HoldingTarget | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => target!.hold(res, (JSON.parse(Buffer.concat(chunks).toString()) as { n: number }).n));
    });
    target = new HoldingTarget(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return target;
  }

  private hold(res: ServerResponse, n: number): void {
    this.held.push(res);
    this.order.push(n);
    this.mostAtOnce = Math.max(this.mostAtOnce, this.held.length);
    this.arrived?.();
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Resolves once `n` requests are held. */
  async holding(n: number): Promise<void> {
    while (this.held.length < n) await new Promise<void>((resolve) => (this.arrived = resolve));
  }

  answerOne(text: string): void {
    const res = this.held.shift()!;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ text }));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Resolves once `facade` has `n` completions waiting for a slot (polled between events, not timed). */
async function waitingAt(facade: VllmFacade, n: number): Promise<void> {
  while (facade.waiting < n) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe("bench:pipeline's stand-in vLLM: --policy-slots", () => {
  let target: HoldingTarget;
  let facade: VllmFacade;
  beforeEach(async () => {
    target = await HoldingTarget.start();
    facade = await VllmFacade.start('fake-policy');
    facade.target = target.url;
  });
  afterEach(async () => {
    await facade.close();
    await target.close();
  });

  const complete = (n: number) =>
    fetch(`${facade.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ n }),
    }).then(async (r) => ((await r.json()) as { text: string }).text);

  it('forwards at most that many completions at once; the rest wait their turn, in arrival order', async () => {
    facade.slots = 2;
    const first = [complete(1), complete(2)];
    await target.holding(2);
    const later = [complete(3)];
    await waitingAt(facade, 1);
    later.push(complete(4));
    await waitingAt(facade, 2);
    assert.equal(target.held.length, 2, 'two forwarded, two waiting');
    target.answerOne('a');
    await target.holding(2); // the freed slot went to the next in line
    assert.equal(facade.waiting, 1);
    target.answerOne('b');
    await target.holding(2);
    assert.equal(facade.waiting, 0);
    target.answerOne('c');
    target.answerOne('d');
    assert.deepEqual((await Promise.all([...first, ...later])).sort(), ['a', 'b', 'c', 'd']);
    assert.deepEqual(target.order.slice(2), [3, 4], 'the waiting ones forwarded in arrival order');
    assert.equal(target.mostAtOnce, 2);
    assert.equal(facade.waiting, 0);
  });

  it('without slots (the default) forwards every completion at once', async () => {
    const all = [complete(1), complete(2), complete(3), complete(4)];
    await target.holding(4);
    assert.equal(facade.waiting, 0);
    for (let i = 0; i < 4; i++) target.answerOne(`c${i}`);
    assert.equal((await Promise.all(all)).length, 4);
    assert.equal(target.mostAtOnce, 4);
  });

  it('--policy-slots defaults to 0 (no limit) and refuses a count that is not a whole number, naming the flag', () => {
    assert.equal(parseOptions([])!.policySlots, 0);
    assert.equal(parseOptions(['--policy-slots', '8'])!.policySlots, 8);
    assert.throws(() => parseOptions(['--policy-slots', '1.5']), /--policy-slots: expected an integer >= 0/);
  });
});
