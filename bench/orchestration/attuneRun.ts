import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { loadConfig } from '../../src/config/load.js';
import type { AttuneConfig } from '../../src/config/schema.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import { rolloutStartOptions } from '../../src/core/rolloutStart.js';
import type { rollout } from '../../src/workflows/rollout.js';
import { dialogueGaps, type DialogueGaps } from './gaps.js';
import { historyTimings, type HistoryTimings } from './history.js';
import type { DialogueSpec } from './loops.js';
import { cpuSeconds, peakRssMb, resetPeakRss, systemBusySeconds } from './procfs.js';
import { dialogueCalls } from './entry.js';
import { progress } from './progress.js';
import { specsFor, type Cell, type RunContext } from './runContext.js';
import type { AttuneStack } from './stack.js';

/** One timed run of C rollout workflows on a stack: wall time, calls, CPU, memory and the histories' timings. */

export interface AttuneResult {
  wallS: number;
  calls: number;
  connections: number;
  timings: HistoryTimings[];
  workerPeakMb: number | null;
  devServerPeakMb: number | null;
  cpu: { worker: number | null; devServer: number | null; parent: number; machine: number | null };
  gaps: DialogueGaps | null;
}

/** Workflows started so far per dev server and rollout task queue (a queue serves every latency of one concurrency). */
const startedOnQueue = new Map<string, number>();

/** `fn` over `items`, at most `limit` at a time, results in order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

/** `read` summed over processes; null if it fails for any of them. */
function summed(pids: number[], read: (pid: number) => number | null): number | null {
  let total = 0;
  for (const pid of pids) {
    const value = read(pid);
    if (value === null) return null;
    total += value;
  }
  return total;
}

/** One dialogue as a rollout workflow, as the CLI starts one, with `maxTurns` turns (bench:load starts them so too). */
export function startBenchRollout(
  client: Client,
  config: AttuneConfig,
  taskQueue: string,
  spec: DialogueSpec,
  maxTurns: number,
): Promise<WorkflowHandle<typeof rollout>> {
  return client.workflow.start<typeof rollout>('rollout', {
    ...rolloutStartOptions(rolloutSettingsFromConfig(config)),
    taskQueue,
    workflowId: spec.rolloutId,
    args: [
      {
        rolloutId: spec.rolloutId,
        scenario: spec.scenario,
        settings: rolloutSettingsFromConfig(config, { ...config.rollout.dialogue, maxTurns }),
        seed: spec.seed,
      },
    ],
  });
}

export async function runAttune(
  ctx: RunContext,
  cell: Cell,
  stack: AttuneStack,
  runTag: string,
): Promise<AttuneResult> {
  const configSet = stack.configSet;
  const { workers, client, server } = stack;
  const pids = workers.map((w) => w.pid);
  const config = loadConfig({ env: {}, set: configSet });
  const queues = taskQueuesFor(config.temporal.taskQueuePrefix);
  const queueKey = `${server.address}/${queues.rollouts}`;
  const start = (spec: DialogueSpec, maxTurns: number) =>
    startBenchRollout(client, config, queues.rollouts, spec, maxTurns);
  // Warm-up at L = 0: workflow bundle loaded, connections open, code paths JIT-compiled.
  ctx.fake.behaviour.latencyMs = 0;
  const warm = await Promise.all(
    specsFor(ctx.scenarios, Math.min(cell.concurrency, 8), `${runTag}-warm`).map((s) => start(s, 2)),
  );
  startedOnQueue.set(queueKey, (startedOnQueue.get(queueKey) ?? 0) + warm.length);
  await Promise.all(warm.map((h) => h.result()));

  ctx.fake.behaviour.latencyMs = cell.latencyMs;
  for (const pid of pids) resetPeakRss(pid);
  resetPeakRss(server.pid);
  const cpu0 = {
    worker: summed(pids, cpuSeconds),
    devServer: cpuSeconds(server.pid),
    parent: process.cpuUsage(),
    machine: systemBusySeconds(),
  };
  const calls0 = ctx.fake.count();
  const recorded0 = ctx.fake.calls.length;
  const connections0 = ctx.connections();
  const specs = specsFor(ctx.scenarios, cell.concurrency, runTag);
  const t0Epoch = Date.now();
  const t0 = performance.now();
  const handles: WorkflowHandle<typeof rollout>[] = await Promise.all(specs.map((s) => start(s, ctx.options.turns)));
  startedOnQueue.set(queueKey, (startedOnQueue.get(queueKey) ?? 0) + handles.length);
  const expectedCalls = dialogueCalls(specs.length, ctx.options.turns);
  const summaries = await withTimeout(
    (async () => {
      await waitForDialogues(
        client,
        queues.rollouts,
        startedOnQueue.get(queueKey) ?? 0,
        () => ctx.fake.count() - calls0 >= expectedCalls,
      );
      // Only the transcript writes are left: the long polls see a few events each.
      return Promise.all(handles.map((h) => h.result()));
    })(),
    variantTimeoutMs(cell, ctx.options.turns),
    'attune',
  );
  const waitedS = (performance.now() - t0) / 1000;
  const calls = ctx.fake.count() - calls0;
  const connections = ctx.connections() - connections0;
  const cpuParent = process.cpuUsage(cpu0.parent);
  const workerCpu = summed(pids, cpuSeconds);
  const devCpu = cpuSeconds(server.pid);
  const machineCpu = systemBusySeconds();
  const result: AttuneResult = {
    wallS: waitedS,
    calls,
    connections,
    timings: [],
    workerPeakMb: summed(pids, peakRssMb),
    devServerPeakMb: peakRssMb(server.pid),
    cpu: {
      worker: workerCpu !== null && cpu0.worker !== null ? workerCpu - cpu0.worker : null,
      devServer: devCpu !== null && cpu0.devServer !== null ? devCpu - cpu0.devServer : null,
      parent: (cpuParent.user + cpuParent.system) / 1e6,
      machine: machineCpu !== null && cpu0.machine !== null ? machineCpu - cpu0.machine : null,
    },
    gaps: null,
  };
  const turnsDone = summaries.reduce((n, s) => n + s.turns, 0);
  if (turnsDone !== cell.concurrency * ctx.options.turns)
    progress('warning: dialogues ended early', { turnsDone, expected: cell.concurrency * ctx.options.turns });
  // Per-turn timings and the wall time from the workflow histories (server timestamps).
  result.timings = await mapLimit(handles, 16, async (h) => {
    const history = await h.fetchHistory();
    // BENCH_DUMP_HISTORY=DIR keeps the first history of each cell, for a closer look.
    if (process.env.BENCH_DUMP_HISTORY && (h === handles[0] || h === handles[handles.length - 1]))
      writeFileSync(join(process.env.BENCH_DUMP_HISTORY, `${h.workflowId}.json`), JSON.stringify(history, null, 1));
    return historyTimings(history.events ?? []);
  });
  result.gaps = dialogueGaps(
    ctx.fake.calls.slice(recorded0),
    specs.map((s) => s.seed),
    ctx.options.turns,
    cell.latencyMs,
    t0Epoch,
    result.timings,
  );
  const lastClose = Math.max(...result.timings.map((t) => t.closedAtMs));
  result.wallS = Number.isFinite(lastClose) ? (lastClose - t0Epoch) / 1000 : waitedS;
  return result;
}

/**
 * Resolves once the dialogues are over: when the fake server has answered every LLM call they
 * should make, or (should one end early) when visibility shows none of them running, checked
 * every 2 s. Visibility queries and result() long polls both cost the dev server CPU (a CLOSE_EVENT
 * long poll is woken by every new event of its workflow), work that a parent workflow awaiting its
 * children would not cause; so neither runs while the dialogues do.
 */
async function waitForDialogues(
  client: Client,
  taskQueue: string,
  expected: number,
  callsDone: () => boolean,
): Promise<void> {
  let nextCheck = Date.now() + 2000;
  while (!callsDone()) {
    if (Date.now() >= nextCheck) {
      const total = (await client.workflow.count(`TaskQueue = "${taskQueue}"`)).count;
      if (
        total >= expected &&
        (await client.workflow.count(`TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`)).count === 0
      )
        return;
      nextCheck = Date.now() + 2000;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** How long a variant may run: a minute, five times the ideal wall time, and room for a CPU-bound run (see README). */
function variantTimeoutMs(cell: Cell, turns: number): number {
  const calls = dialogueCalls(cell.concurrency, turns);
  return 60_000 + 5 * cell.latencyMs * 3 * turns + 50 * calls;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
