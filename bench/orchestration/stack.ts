import { join } from 'node:path';
import { Connection, type Client } from '@temporalio/client';
import { temporalClient } from '../../src/temporal/connect.js';
import { Child, isReady } from './childProcess.js';
import { BenchDevServer } from './devServer.js';
import type { AlternativeKey } from './options.js';
import { progress } from './progress.js';
import type { WorkersJob } from './protocol.js';
import type { RunContext } from './runContext.js';

/** The Attune side of a concurrency level: a dev server and the LLM-I/O worker processes on it. */

/** The config of one concurrency level (one worker process serves all latencies of that level). */
export function configSetFor(
  concurrency: number,
  maxLatencyMs: number,
  fakeUrl: string,
  home: string,
  turns: number,
): string[] {
  // Generous HTTP timeouts: at L = 0 and C = 256 a call can wait in the worker's event loop.
  const timeoutMs = Math.max(30_000, maxLatencyMs * 20);
  return [
    `home=${home}`,
    `temporal.taskQueuePrefix=bench-c${concurrency}-`,
    `policy.baseURL=${fakeUrl}`,
    'policy.model=fake-policy',
    `simulator.baseURL=${fakeUrl}`,
    'simulator.model=fake-simulator',
    `policy.timeoutMs=${timeoutMs}`,
    `simulator.timeoutMs=${timeoutMs}`,
    // Same concurrency as the loops: one policy or simulator call in flight per dialogue.
    `policy.maxConcurrency=${concurrency}`,
    `simulator.maxConcurrency=${concurrency}`,
    `rollout.dialogue.maxTurns=${turns}`,
  ];
}

/** A dev server, a client of it, and the Attune workers on it: one per concurrency level. */
export interface AttuneStack {
  server: BenchDevServer;
  connection: Connection;
  client: Client;
  workers: Child[];
  /** The workers' and the starter's config (`rollout.llmCalls` and `rollout.activityPer` decide the variant). */
  configSet: string[];
}

/** The stacks of one concurrency level: the default variant's and the alternatives' (`ALTERNATIVES`). */
export interface LevelStacks {
  attune: AttuneStack | null;
  alternatives: Partial<Record<AlternativeKey, AttuneStack>>;
}

/** Dev servers still up and their connections, for the cleanup after an error or Ctrl-C (worker processes are in `ctx.children`). */
const liveServers = new Map<BenchDevServer, Connection>();

/** A fresh dev server (its CPU per call grows with the workflows it has stored, so levels must not inherit each other's) and the workers. */
export async function startStack(ctx: RunContext, home: string, configSet: string[]): Promise<AttuneStack> {
  const server = await BenchDevServer.start({
    home: join(home, 'temporal'),
    inMemory: ctx.options.db === 'memory',
    sqlitePragmas: ctx.options.sqlitePragmas,
    dynamicConfig: ctx.options.dynamicConfig,
  });
  progress('dev server up', {
    address: server.address,
    pid: server.pid,
    args: server.args.filter((a) => !a.startsWith('Attune')).join(' '),
  });
  const connection = await Connection.connect({ address: server.address });
  liveServers.set(server, connection);
  const workers: Child[] = [];
  for (let i = 0; i < ctx.options.workerProcesses; i++) workers.push(await startWorkers(ctx, server, configSet));
  return { server, connection, client: temporalClient(connection, 'default'), workers, configSet };
}

export async function stopStack(ctx: RunContext, stack: AttuneStack): Promise<void> {
  for (const worker of stack.workers) {
    await worker.stop();
    ctx.children.delete(worker);
  }
  await stack.connection.close().catch(() => undefined);
  await stack.server.stop().catch(() => undefined);
  liveServers.delete(stack.server);
}

/** The Attune LLM-I/O workers of one concurrency level, in a child process. */
async function startWorkers(ctx: RunContext, server: BenchDevServer, configSet: string[]): Promise<Child> {
  const job: WorkersJob = {
    address: server.address,
    namespace: 'default',
    configSet,
    bundleCodePath: ctx.bundleCodePath,
    bundleSourceMapPath: ctx.bundleSourceMapPath,
    workerOverrides: ctx.options.workerOverrides,
  };
  const worker = Child.start('workers', { BENCH_WORKERS_JOB: JSON.stringify(job) }, ctx.options.profileDir);
  ctx.children.add(worker);
  try {
    await worker.next(isReady, 60_000);
  } catch (error) {
    worker.kill();
    ctx.children.delete(worker);
    throw error;
  }
  return worker;
}

/** Stops the dev servers still up (after an error or Ctrl-C). */
export async function stopLiveServers(): Promise<void> {
  for (const [server, connection] of liveServers) {
    await connection.close().catch(() => undefined);
    await server.stop().catch(() => undefined);
  }
}
