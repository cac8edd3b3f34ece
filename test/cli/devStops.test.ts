import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { freePort } from '../../src/temporal/devServer.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';
import { startAttune } from './attuneProcess.js';
import { processAlive } from '../support/processAlive.js';

/** Every process whose parent is `pid` (from /proc: no ps needed). */
function childPids(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name is in parentheses and may hold spaces: the fields after its ')' are fixed.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/** Polls until none of `pids` is alive; fails naming those left after `withinMs`. */
async function allGone(pids: number[], withinMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const left = pids.filter(processAlive);
    if (left.length === 0) return Date.now() - started;
    if (Date.now() - started > withinMs) throw new Error(`still running after ${withinMs} ms: ${left.join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** An OpenAI-compatible endpoint that takes requests and never answers them, so a call stays in flight. */
async function silentEndpoint(): Promise<{ url: string; requested: Promise<void>; close(): Promise<void> }> {
  const held: ServerResponse[] = [];
  let onRequest!: () => void;
  const requested = new Promise<void>((resolve) => (onRequest = resolve));
  const server: Server = createServer((_req, res) => {
    held.push(res);
    onRequest();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requested,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const STOP_BOUND_MS = 15_000;

describe('attune dev: every child stops with it', function () {
  this.timeout(240_000);
  const started: ChildProcess[] = [];
  afterEach(() => {
    for (const child of started.splice(0)) child.kill('SIGKILL');
  });

  it(`SIGINT to its pid alone, with an LLM call in flight: the dev server, the trainer and the watchdog are gone within ${STOP_BOUND_MS / 1000} s`, async () => {
    const endpoint = await silentEndpoint();
    try {
      const [port, uiPort, trainerPort] = [await freePort(), await freePort(), await freePort()];
      const set = [
        ...['--set', `temporal.devServer.port=${port}`, '--set', `temporal.devServer.uiPort=${uiPort}`],
        ...['--set', `policy.baseURL=${endpoint.url}`, '--set', `simulator.baseURL=${endpoint.url}`],
        ...['--set', `trainer.url=http://127.0.0.1:${trainerPort}`],
      ];
      const env = { ...process.env, ATTUNE_HOME: mkdtempSync(join(tmpdir(), 'attune-dev-stops-')) };
      const dev = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'attune.js'), 'dev', ...set], {
        cwd: REPO_ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      started.push(dev);
      let out = '';
      await new Promise<void>((resolve, reject) => {
        dev.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          if (out.includes('Press Ctrl-C to stop.')) resolve();
        });
        dev.stderr.on('data', (c: Buffer) => (out += c.toString()));
        dev.once('exit', (code) => reject(new Error(`attune dev exited (${code}):\n${out}`)));
      });
      // A dialogue whose first call the endpoint holds: the workers have something to drain.
      const rollout = startAttune(
        ['rollout', '--scenario', 'test-venting-negative-baker', '--scenarios', FIXTURE_SCENARIOS, ...set],
        { ATTUNE_HOME: env.ATTUNE_HOME },
      );
      void rollout.done.catch(() => undefined);
      await endpoint.requested;

      const children = childPids(dev.pid!);
      const commands = children.map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '));
      assert.ok(
        commands.some((c) => c.includes('temporal server start-dev')),
        commands.join('\n'),
      );
      assert.ok(
        commands.some((c) => c.includes('attune_trainer serve')),
        commands.join('\n'),
      );
      assert.ok(
        commands.some((c) => c.includes('attune-child-watchdog')),
        commands.join('\n'),
      );
      dev.kill('SIGINT');
      const tookMs = await allGone([dev.pid!, ...children], STOP_BOUND_MS);
      assert.ok(tookMs < STOP_BOUND_MS, `${tookMs} ms`);
    } finally {
      await endpoint.close();
    }
  });

  it('SIGKILL to the parent: the watchdog stops the children it left', async () => {
    // The smallest owner of a child: a Node process that starts one through stopsWithThisProcess.
    const code = [
      "const { spawn } = require('node:child_process');",
      `const { stopsWithThisProcess } = require(${JSON.stringify(join(REPO_ROOT, 'src', 'childWatchdog.ts'))});`,
      "const child = stopsWithThisProcess(spawn('sleep', ['600'], { stdio: 'ignore' }));",
      'process.stdout.write(`${child.pid}\\n`);',
      'setInterval(() => undefined, 1000);',
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', 'tsx', '-e', code], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    started.push(parent);
    const sleepPid = await new Promise<number>((resolve, reject) => {
      let out = '';
      parent.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(Number(out.trim()));
      });
      parent.once('exit', (exitCode) => reject(new Error(`the parent exited (${exitCode}): ${out}`)));
    });
    assert.ok(processAlive(sleepPid));
    parent.kill('SIGKILL');
    await allGone([sleepPid], STOP_BOUND_MS);
  });
});
