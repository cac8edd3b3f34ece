import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevServer, freePort, startupOutput } from '../../src/temporal/devServer.js';

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A listener that is not Temporal: it accepts connections and never answers. */
async function squatter(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await close(server);
    },
  };
}

describe('dev server ports', () => {
  it('freePort gives ports that bind(0) does not hand out again, yet that can be bound explicitly', async () => {
    const picked = new Set<number>();
    for (let i = 0; i < 20; i++) picked.add(await freePort());
    assert.equal(picked.size, 20);
    // The dev server picks its internal ports with bind(0) after checking ours are free; with a
    // plain listen-and-close picker, some of these 3,000 binds return one of our ports.
    const clashes: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const server = await listen(0);
      const { port } = server.address() as { port: number };
      if (picked.has(port)) clashes.push(port);
      await close(server);
    }
    assert.deepEqual(clashes, []);
    for (const port of picked) await close(await listen(port));
  });

  it('a dev server whose port is taken fails at start-up, naming the port', async () => {
    const taken = await squatter();
    const { port } = taken;
    try {
      const server = await DevServer.create({
        home: mkdtempSync(join(tmpdir(), 'attune-devserver-test-')),
        port,
        headless: true,
      });
      await assert.rejects(server.start(), (error: Error) => {
        assert.match(error.message, /exited during start-up/);
        assert.match(error.message, new RegExp(`${port}.*address already in use`));
        return true;
      });
    } finally {
      await taken.close();
    }
  });

  it('start-up output keeps the head, where a panic names its cause, and the last lines', () => {
    const output = `panic: the cause\n${'trace line\n'.repeat(1000)}last line\n`;
    const shown = startupOutput(output);
    assert.ok(shown.startsWith('panic: the cause'));
    assert.ok(shown.endsWith('last line\n'));
    assert.match(shown, /characters left out/);
    assert.equal(startupOutput('short'), 'short');
  });
});
