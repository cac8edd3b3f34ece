/**
 * The fake OpenAI server as a process of its own on a multi-host test's host:
 *   node --import tsx test/multihost/fakeServerHost.ts HOST PORT
 * `/v1` speaks chat completions and vLLM's LoRA load API (serving an adapter name only once loaded, as a
 * restarted vLLM that lost its adapters does); `GET /state` on PORT+1 answers which adapter digest each
 * name was loaded with (read from the adapter directory's record at load time), the policy calls
 * answered and every chat completion answered (fingerprint, calling host, when); `POST /latency?ms=N` on
 * PORT+1 makes each chat completion from then on take N ms (holding dialogues in flight, so that faults
 * find them running). Simulator answers depend only on the request, so runs of one seed see the same dialogues.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { ADAPTER_RECORD } from '../../src/trainer/adapterFiles.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import type { FakeHostState } from './fakeHostState.js';

const BEHAVIOUR = { analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }) };

function digestIn(dir: string): string | null {
  try {
    return (JSON.parse(readFileSync(join(dir, ADAPTER_RECORD), 'utf8')) as { digest?: string }).digest ?? null;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const [host, portText] = process.argv.slice(2);
  const port = Number(portText);
  if (!host || !Number.isInteger(port)) throw new Error('usage: fakeServerHost.ts HOST PORT');
  const fake = await FakeOpenAIServer.start(BEHAVIOUR, port, host);
  fake.lora.servesOnlyLoaded = true;
  // The calling host of each chat completion, by the client's TCP port (RecordedCall keeps the port): the
  // server's connections, seen as they open. Ports of two hosts may coincide; the later connection wins.
  const hostOfPort = new Map<number, string>();
  (fake as unknown as { server: Server }).server.on('connection', (socket) => {
    if (socket.remotePort !== undefined) hostOfPort.set(socket.remotePort, socket.remoteAddress ?? '?');
  });
  const digests = new Map<number, string | null>();
  const state = (): FakeHostState => ({
    loads: fake.lora.loads
      .map((load, i) => {
        if (load.status === 200 && !digests.has(i)) digests.set(i, digestIn(load.path));
        return { load, digest: digests.get(i) ?? null };
      })
      .filter(({ load }) => load.status === 200)
      .map(({ load, digest }) => ({ name: load.name, digest })),
    policyCalls: fake.calls.filter((c) => c.role === 'policy' && c.status === 200).length,
    answered: fake.calls
      .filter((c) => c.status === 200)
      .map((c) => ({
        fingerprint: c.key,
        role: c.role,
        from: hostOfPort.get(c.remotePort) ?? '?',
        atMs: Math.round(c.answeredAtMs),
        delivered: c.delivered,
      })),
  });
  // The adapter directory is read as soon as a load is answered, before a later publish replaces it.
  setInterval(() => state(), 50).unref();
  const control = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control');
    const latency = req.method === 'POST' && url.pathname === '/latency' ? Number(url.searchParams.get('ms')) : NaN;
    if (Number.isInteger(latency) && latency >= 0) fake.behaviour = { ...fake.behaviour, latencyMs: latency };
    const found = url.pathname === '/state' || Number.isInteger(latency);
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
    res.end(url.pathname === '/state' ? JSON.stringify(state()) : '{}');
  });
  await new Promise<void>((resolve) => control.listen(port + 1, host, resolve));
  process.stdout.write(`fake server ready on ${fake.url}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`fakeServerHost: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
