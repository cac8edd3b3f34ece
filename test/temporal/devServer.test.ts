import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findTemporalCli } from '../../src/temporal/cliBinary.js';
import {
  DevServer,
  freePort,
  readinessAttemptTimeoutMs,
  startupOutput,
  temporalReachable,
} from '../../src/temporal/devServer.js';

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

describe('dev server readiness on a loaded machine', function () {
  this.timeout(120_000);

  it('waits longer per attempt when the frontend is slow to answer, instead of failing after a minute of one-second tries', async () => {
    const home = mkdtempSync(join(tmpdir(), 'attune-devserver-slow-'));
    const wrapper = join(home, 'temporal');
    writeFileSync(
      wrapper,
      `#!/bin/sh\nexec node --import tsx ${JSON.stringify(join(__dirname, '..', 'support', 'slowFrontendCli.ts'))} "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    const saved = { path: process.env.TEMPORAL_CLI_PATH, real: process.env.REAL_TEMPORAL_CLI };
    process.env.REAL_TEMPORAL_CLI = findTemporalCli();
    process.env.TEMPORAL_CLI_PATH = wrapper;
    // Every connection is held 1.5 s: a fixed one-second attempt never sees an answer.
    process.env.SLOW_FRONTEND_DELAY_MS = '1500';
    const server = await DevServer.create({ home: join(home, 'state'), headless: true, readyTimeoutMs: 40_000 });
    try {
      await server.start();
      assert.ok(await temporalReachable(server.address, 5000));
    } finally {
      await server.stop();
      process.env.TEMPORAL_CLI_PATH = saved.path;
      process.env.REAL_TEMPORAL_CLI = saved.real;
      if (saved.path === undefined) delete process.env.TEMPORAL_CLI_PATH;
      if (saved.real === undefined) delete process.env.REAL_TEMPORAL_CLI;
      delete process.env.SLOW_FRONTEND_DELAY_MS;
    }
  });

  it('attempts start at one second and grow to at most fifteen', () => {
    assert.equal(readinessAttemptTimeoutMs(0), 1000);
    assert.equal(readinessAttemptTimeoutMs(3), 2000);
    assert.equal(readinessAttemptTimeoutMs(100), 15_000);
  });
});
