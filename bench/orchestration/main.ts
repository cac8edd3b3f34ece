/**
 * Orchestration benchmark (issue 6): what durable orchestration costs.
 *
 * For each fake-LLM latency L and concurrency C, C dialogues of 8 turns each run three ways against
 * one fake OpenAI-compatible server (in this process):
 *   attune     C rollout workflows at once on a real Temporal dev server, through the real LLM-I/O
 *              workers (in a child process, so its peak RSS is its own)
 *   plain (a)  the same activity code in C concurrent async loops, no Temporal (the limit)
 *   reference (b) shaped like the reference RLVER rollout: per turn, a concurrent batch of policy
 *              turns, then the simulator (analysis + reply) per live dialogue, one after another
 *
 *   npm run bench:orchestration [-- --quick | --latencies 0,100,1000 --concurrency 16,64,256]
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { rolloutStartOptions } from '../../src/core/rolloutStart.js';
import { LIMITS } from '../../src/config/limits.js';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import type { Scenario } from '../../src/core/scenario.js';
import { REPO_ROOT } from '../../src/paths.js';
import { requireScenarioLibrary } from '../../src/scenarios/library.js';
import { bundleWorkflows } from '../../src/workers/workflowSource.js';
import type { rollout } from '../../src/workflows/rollout.js';
import { FakeOpenAIServer } from '../../test/support/fakeOpenAI.js';
import { BenchDevServer } from './devServer.js';
import { historyTimings, mean, percentile, type HistoryTimings } from './history.js';
import { dialogueGaps, type DialogueGaps } from './gaps.js';
import type { DialogueSpec, LoopResult, ReferenceResult, TurnTiming } from './loops.js';
import { cpuSeconds, peakRssMb, resetPeakRss, systemBusySeconds } from './procfs.js';
import type { LoopJob, ToParent, WorkersJob } from './protocol.js';

const HELP = `Orchestration benchmark: Attune (Temporal) vs a plain loop vs the reference RLVER loop shape.

Usage: npm run bench:orchestration [-- options]

  --latencies LIST        fake LLM latency per call, ms (default 0,100,1000)
  --concurrency LIST      dialogues at once (default 16,64,256)
  --turns N               assistant turns per dialogue (default 8)
  --quick                 smoke run: latencies 0,100, concurrency 16, 4 turns
  --reference-budget S    seconds of timed sequential simulator calls per cell in the reference
                          loop; beyond that the rest is extrapolated (default 3)
  --db MODE               dev-server persistence:
                            wal     SQLite file with journal_mode=wal, synchronous=normal (default;
                                    what src/temporal/devServer.ts starts)
                            file    SQLite file with SQLite's defaults (rollback journal, fsync on
                                    every commit)
                            memory  in-memory SQLite (what the test suite uses)
  --sqlite-pragma P=V     extra dev-server --sqlite-pragma (repeatable)
  --dynamic-config K=V    extra dev-server --dynamic-config-value (repeatable)
  --variants LIST         which to run: attune,attune-local,attune-turn,attune-turn-local,plain,
                          reference (default all); the attune-* ones are the same workflows with
                            attune-local       rollout.llmCalls=local (a local activity per call)
                            attune-turn        rollout.activityPer=turn (an activity per turn)
                            attune-turn-local  both (a local activity per turn)
  --out FILE              results file (default bench/results/orchestration.json)
  --update                replace only the measured cells in an existing results file (to re-measure
                          some cells, e.g. ones another workload on the machine disturbed)
  --keep-alive MS         keep-alive the fake server advertises (default 30000; the test
                          suite's 1000 makes Node's fetch open a connection per call)
  --max-minutes M         stop everything after M minutes (default 20)
  --worker-processes N    LLM-I/O worker processes per attune variant (default 1; CPU and peak RSS
                          are summed over them)
  --worker-option Q.K=V   override a Worker option for an experiment, Q = all|rollouts|policy|
                          simulator, V as JSON (e.g. rollouts.maxCachedWorkflows=500) (repeatable)
  --bundle WHICH          workflow bundle: full (src/workflows, as the workers run it; default) or
                          rollout-only (experiment: the rollout workflow alone)
  --profile DIR           write V8 CPU profiles of the worker and loop processes to DIR
  --help                  this text

Progress: JSON lines on stderr. Result: a table on stdout and the JSON file.`;

interface Options {
  latencies: number[];
  concurrency: number[];
  turns: number;
  referenceBudgetS: number;
  db: 'wal' | 'file' | 'memory';
  sqlitePragmas: string[];
  dynamicConfig: string[];
  variants: Set<string>;
  out: string;
  maxMinutes: number;
  workerProcesses: number;
  profileDir: string | null;
  keepAliveMs: number;
  bundle: 'full' | 'rollout-only';
  update: boolean;
  workerOverrides: WorkersJob['workerOverrides'];
}

/**
 * The other ways to run the same rollout workflow, each on its own dev server and worker process;
 * each fills its key of an entry (`local`, `turn`, `turn_local`).
 */
const ALTERNATIVES = {
  'attune-local': { key: 'local', set: ['rollout.llmCalls=local'] },
  'attune-turn': { key: 'turn', set: ['rollout.activityPer=turn'] },
  'attune-turn-local': { key: 'turn_local', set: ['rollout.activityPer=turn', 'rollout.llmCalls=local'] },
} as const;
type AlternativeKey = (typeof ALTERNATIVES)[keyof typeof ALTERNATIVES]['key'];
type AlternativeStacks = Partial<Record<AlternativeKey, AttuneStack>>;

/** Write-ahead log, and fsync at checkpoints rather than at every commit: survives a killed process, not a power cut. */
const WAL_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'];

function numberList(text: string, name: string): number[] {
  const values = text.split(',').map((s) => Number(s.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 0))
    throw new Error(`--${name}: expected a comma-separated list of non-negative integers, got "${text}"`);
  return values;
}

function parseWorkerOption(text: string): WorkersJob['workerOverrides'][number] {
  const match = /^(all|rollouts|policy|simulator)\.([A-Za-z][A-Za-z0-9]*)=(.*)$/.exec(text);
  if (!match)
    throw new Error(
      `--worker-option ${text}: expected QUEUE.KEY=JSON with QUEUE one of all, rollouts, policy, simulator`,
    );
  let value: unknown;
  try {
    value = JSON.parse(match[3]!);
  } catch {
    throw new Error(`--worker-option ${text}: the value must be JSON`);
  }
  return { queue: match[1] as 'all', key: match[2]!, value };
}

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      latencies: { type: 'string' },
      concurrency: { type: 'string' },
      turns: { type: 'string' },
      quick: { type: 'boolean', default: false },
      'reference-budget': { type: 'string' },
      db: { type: 'string', default: 'wal' },
      'sqlite-pragma': { type: 'string', multiple: true, default: [] },
      'dynamic-config': { type: 'string', multiple: true, default: [] },
      variants: { type: 'string', default: ['attune', ...Object.keys(ALTERNATIVES), 'plain', 'reference'].join(',') },
      out: { type: 'string', default: join(REPO_ROOT, 'bench', 'results', 'orchestration.json') },
      'max-minutes': { type: 'string', default: '20' },
      'worker-processes': { type: 'string', default: '1' },
      profile: { type: 'string' },
      'worker-option': { type: 'string', multiple: true, default: [] },
      'keep-alive': { type: 'string', default: '30000' },
      bundle: { type: 'string', default: 'full' },
      update: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return null;
  const quick = values.quick ?? false;
  const latencies = values.latencies ? numberList(values.latencies, 'latencies') : quick ? [0, 100] : [0, 100, 1000];
  const concurrency = values.concurrency ? numberList(values.concurrency, 'concurrency') : quick ? [16] : [16, 64, 256];
  if (concurrency.some((c) => c < 1)) throw new Error('--concurrency: each value must be at least 1');
  const turns = values.turns ? Number(values.turns) : quick ? 4 : 8;
  if (!Number.isInteger(turns) || turns < 1 || turns > 50) throw new Error('--turns: an integer from 1 to 50');
  const referenceBudgetS = Number(values['reference-budget'] ?? 3);
  if (!(referenceBudgetS > 0)) throw new Error('--reference-budget: a positive number of seconds');
  if (values.bundle !== 'full' && values.bundle !== 'rollout-only') throw new Error('--bundle: full or rollout-only');
  if (values.db !== 'wal' && values.db !== 'file' && values.db !== 'memory')
    throw new Error('--db: wal, file or memory');
  const variants = new Set(
    (values.variants ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  for (const v of variants)
    if (!['attune', ...Object.keys(ALTERNATIVES), 'plain', 'reference'].includes(v))
      throw new Error(`--variants: unknown variant "${v}"`);
  const workerProcesses = Number(values['worker-processes']);
  if (!Number.isInteger(workerProcesses) || workerProcesses < 1 || workerProcesses > 16)
    throw new Error('--worker-processes: an integer from 1 to 16');
  const maxMinutes = Number(values['max-minutes']);
  if (!(maxMinutes > 0)) throw new Error('--max-minutes: a positive number');
  return {
    latencies,
    concurrency,
    turns,
    referenceBudgetS,
    db: values.db,
    sqlitePragmas: [...(values.db === 'wal' ? WAL_PRAGMAS : []), ...(values['sqlite-pragma'] ?? [])],
    dynamicConfig: values['dynamic-config'] ?? [],
    variants,
    out: values.out ?? '',
    maxMinutes,
    workerProcesses,
    profileDir: values.profile ? resolve(values.profile) : null,
    workerOverrides: (values['worker-option'] ?? []).map(parseWorkerOption),
    keepAliveMs: Number(values['keep-alive']),
    bundle: values.bundle === 'rollout-only' ? 'rollout-only' : 'full',
    update: values.update ?? false,
  };
}

function progress(msg: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg, source: 'bench:orchestration', ...fields })}\n`,
  );
}

const round = (value: number, digits = 2): number =>
  Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : NaN;

// ---------------------------------------------------------------------------------------------
// Child processes

const CHILD = join(__dirname, 'child.ts');

class Child {
  private readonly waiters: ((message: ToParent) => boolean)[] = [];
  readonly exited: Promise<number | null>;
  private log = '';

  private constructor(readonly proc: ChildProcess) {
    this.exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.on('message', (message: ToParent) => {
      if (message.kind === 'error') progress('child error', { pid: proc.pid, error: message.message });
      for (let i = 0; i < this.waiters.length; i++) {
        if (this.waiters[i]!(message)) this.waiters.splice(i--, 1);
      }
    });
    // Child output (Temporal warnings, crashes) goes to our stderr, and is kept for error messages.
    const pass = (chunk: Buffer) => {
      const text = chunk.toString();
      this.log = (this.log + text).slice(-4000);
      // The policy and simulator workers have no workflows; the SDK says so once per worker.
      const kept = text
        .split('\n')
        .filter((line) => !line.includes('No workflows registered, not polling for workflow tasks'))
        .join('\n');
      if (kept.trim()) process.stderr.write(kept.endsWith('\n') ? kept : `${kept}\n`);
    };
    proc.stdout?.on('data', pass);
    proc.stderr?.on('data', pass);
  }

  static start(mode: 'workers' | 'loops', env: Record<string, string> = {}, profileDir: string | null = null): Child {
    const execArgv = [...process.execArgv, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
    const child = fork(CHILD, [mode], {
      env: { ...process.env, ...env },
      execArgv,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    return new Child(child);
  }

  get pid(): number {
    return this.proc.pid ?? -1;
  }

  /** Resolves with the first message that `match` accepts; rejects if the child exits or reports an error first, or on timeout. */
  next<T extends ToParent>(match: (m: ToParent) => m is T, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`child ${this.pid}: no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onExit = (code: number | null) => {
        clearTimeout(timer);
        reject(new Error(`child ${this.pid} exited (${code}):\n${this.log.slice(-2000)}`));
      };
      this.proc.once('exit', onExit);
      this.waiters.push((m) => {
        if (m.kind === 'error') {
          clearTimeout(timer);
          this.proc.off('exit', onExit);
          reject(new Error(`child ${this.pid}: ${m.message}`));
          return true;
        }
        if (!match(m)) return false;
        clearTimeout(timer);
        this.proc.off('exit', onExit);
        resolve(m);
        return true;
      });
    });
  }

  send(message: LoopJob | { kind: 'stop' }): void {
    this.proc.send(message);
  }

  async stop(timeoutMs = 20_000): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    try {
      if (this.proc.connected) this.send({ kind: 'stop' });
    } catch {
      // already gone
    }
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }
}

const isReady = (m: ToParent): m is Extract<ToParent, { kind: 'ready' }> => m.kind === 'ready';

// ---------------------------------------------------------------------------------------------
// One cell

interface Cell {
  latencyMs: number;
  concurrency: number;
}

interface AttuneResult {
  wallS: number;
  calls: number;
  connections: number;
  timings: HistoryTimings[];
  workerPeakMb: number | null;
  devServerPeakMb: number | null;
  cpu: { worker: number | null; devServer: number | null; parent: number; machine: number | null };
  gaps: DialogueGaps | null;
}

/** The config of one concurrency level (one worker process serves all latencies of that level). */
function configSetFor(
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
    `rollout.maxTurns=${turns}`,
  ];
}

function specsFor(scenarios: Scenario[], count: number, tag: string): DialogueSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    rolloutId: `${tag}-${i}`,
    scenario: scenarios[i % scenarios.length]!,
    seed: i + 1,
  }));
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** A dev server, a client of it, and the Attune workers on it: one per concurrency level. */
interface AttuneStack {
  server: BenchDevServer;
  connection: Connection;
  client: Client;
  workers: Child[];
  /** The workers' and the starter's config (`rollout.llmCalls` and `rollout.activityPer` decide the variant). */
  configSet: string[];
}

/** Dev servers still up and their connections, for the cleanup after an error or Ctrl-C (worker processes are in `ctx.children`). */
const liveServers = new Map<BenchDevServer, Connection>();

/** A fresh dev server (its CPU per call grows with the workflows it has stored, so levels must not inherit each other's) and the workers. */
async function startStack(ctx: RunContext, home: string, configSet: string[]): Promise<AttuneStack> {
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
  return { server, connection, client: new Client({ connection, namespace: 'default' }), workers, configSet };
}

async function stopStack(ctx: RunContext, stack: AttuneStack): Promise<void> {
  for (const worker of stack.workers) {
    await worker.stop();
    ctx.children.delete(worker);
  }
  await stack.connection.close().catch(() => undefined);
  await stack.server.stop().catch(() => undefined);
  liveServers.delete(stack.server);
}

/** Workflows started so far per dev server and rollout task queue (a queue serves every latency of one concurrency). */
const startedOnQueue = new Map<string, number>();

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

async function runAttune(ctx: RunContext, cell: Cell, stack: AttuneStack, runTag: string): Promise<AttuneResult> {
  const configSet = stack.configSet;
  const { workers, client, server } = stack;
  const pids = workers.map((w) => w.pid);
  const config = loadConfig({ env: {}, set: configSet });
  const queues = taskQueuesFor(config.temporal.taskQueuePrefix);
  const queueKey = `${server.address}/${queues.rollouts}`;
  const start = async (spec: DialogueSpec, maxTurns: number) =>
    client.workflow.start<typeof rollout>('rollout', {
      ...rolloutStartOptions(rolloutSettingsFromConfig(config)),
      taskQueue: queues.rollouts,
      workflowId: spec.rolloutId,
      args: [
        {
          rolloutId: spec.rolloutId,
          scenario: spec.scenario,
          settings: rolloutSettingsFromConfig(config, { maxTurns }),
          seed: spec.seed,
        },
      ],
    });
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
  const connections0 = httpConnections;
  const specs = specsFor(ctx.scenarios, cell.concurrency, runTag);
  const t0Epoch = Date.now();
  const t0 = performance.now();
  const handles: WorkflowHandle<typeof rollout>[] = await Promise.all(specs.map((s) => start(s, ctx.options.turns)));
  startedOnQueue.set(queueKey, (startedOnQueue.get(queueKey) ?? 0) + handles.length);
  const expectedCalls = specs.length * (3 * ctx.options.turns - 1);
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
  const connections = httpConnections - connections0;
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

async function runLoop(ctx: RunContext, job: LoopJob): Promise<LoopResult | ReferenceResult> {
  const done = ctx.loops.next(
    (m): m is Extract<ToParent, { kind: 'plain-done' | 'reference-done' }> =>
      (m.kind === 'plain-done' || m.kind === 'reference-done') && m.id === job.id,
    30 * 60_000,
  );
  ctx.loops.send(job);
  return (await done).result;
}

function variantTimeoutMs(cell: Cell, turns: number): number {
  // Five times the ideal wall time, plus 50 ms of CPU per LLM call (a CPU-bound run on 2 cores needs about 12).
  const calls = cell.concurrency * (3 * turns - 1);
  return 60_000 + 5 * cell.latencyMs * 3 * turns + 50 * calls;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------------------------------------

interface RunContext {
  options: Options;
  fake: FakeOpenAIServer;
  loops: Child;
  scenarios: Scenario[];
  bundleCodePath: string;
  bundleSourceMapPath: string;
  children: Set<Child>;
  workdir: string;
}

export interface Entry {
  measured_at: string;
  /** The machine's 1-minute load average when the cell began (other work on a shared machine skews timings). */
  load_average_1m: number;
  latency_ms: number;
  concurrency: number;
  turns: number;
  attune_s: number | null;
  plain_s: number | null;
  reference_s: number | null;
  attune_over_plain: number | null;
  attune_over_reference: number | null;
  dialogues_per_s: number | null;
  calls_per_s: number | null;
  llm_calls: number | null;
  /** TCP connections the fake server accepted during the timed attune run. */
  http_connections: number | null;
  plain_calls_per_s: number | null;
  /** Added latency per turn: turn wall time minus L x the turn's LLM calls (attune, from workflow histories). */
  p50_ms: number | null;
  p95_ms: number | null;
  /** The same for the plain loop. */
  plain_p50_ms: number | null;
  plain_p95_ms: number | null;
  /** Turn wall time minus the HTTP time the activities measured themselves: Temporal's own share. */
  orchestration_p50_ms: number | null;
  orchestration_p95_ms: number | null;
  /** Median added latency of turn 1, 2, ... (turn 1 includes starting the workflow). */
  p50_ms_by_turn: number[] | null;
  /** Where each dialogue's time beyond L x its calls goes (see gaps.ts): attune, then the plain loop. */
  gaps_ms: DialogueGaps | null;
  plain_gaps_ms: DialogueGaps | null;
  worker_rss_mb: number | null;
  dev_server_rss_mb: number | null;
  cpu_s: Record<string, number | null>;
  /** CPU of worker + dev server + fake server and client, per LLM call (attune); loop + fake (plain). */
  cpu_ms_per_call: number | null;
  plain_cpu_ms_per_call: number | null;
  /** Means over all LLM activities and workflow tasks of the timed run (server timestamps). */
  breakdown_ms: Record<string, number> | null;
  history_events_per_workflow: number | null;
  /** Workflow tasks that timed out or failed in the timed run (each costs a retry, possibly a replay). */
  workflow_task_timeouts: number | null;
  workflow_task_failures: number | null;
  payload_kb_per_workflow: number | null;
  reference_measured_s: number | null;
  reference_extrapolated: boolean | null;
  reference_sequential_measured_fraction: number | null;
  dev_server: string;
  workflow_bundle: string;
  /** LLM-I/O worker processes per attune variant (`worker_rss_mb` and `cpu_s` sum over them). */
  worker_processes: number;
  worker_overrides: Record<string, unknown>;
  worker_limits: Record<string, number>;
  /**
   * The same workflows run otherwise (`ALTERNATIVES`): `local` with `rollout.llmCalls: local`,
   * `turn` with `rollout.activityPer: turn`, `turn_local` with both. No per-turn latencies: local
   * activities leave no scheduled/started events, and a turn activity has no call boundaries.
   */
  local: VariantEntry | null;
  turn: VariantEntry | null;
  turn_local: VariantEntry | null;
}

export interface VariantEntry {
  attune_s: number;
  attune_over_plain: number | null;
  /** Dialogue calls per second (C x (3 x turns - 1) / attune_s), repeated calls not counted. */
  calls_per_s: number;
  /**
   * Calls made again: when an overloaded worker lets a workflow task time out, the local
   * activities it had not yet recorded run again (and a retried local turn repeats its calls).
   */
  repeated_calls: number;
  worker_rss_mb: number | null;
  dev_server_rss_mb: number | null;
  cpu_s: Record<string, number | null>;
  cpu_ms_per_call: number;
  history_events_per_workflow: number;
  payload_kb_per_workflow: number;
  gaps_ms: DialogueGaps | null;
}

function addedLatencies(turns: TurnTiming[], latencyMs: number): number[] {
  return turns.map((t) => t.ms - latencyMs * t.calls);
}

async function runCell(
  ctx: RunContext,
  cell: Cell,
  index: number,
  stacks: { attune: AttuneStack | null; alternatives: AlternativeStacks },
  configSet: string[],
): Promise<Entry> {
  const { options } = ctx;
  const tag = `l${cell.latencyMs}-c${cell.concurrency}-${index}`;
  const entry: Entry = {
    measured_at: new Date().toISOString(),
    load_average_1m: round(loadavg()[0] ?? NaN, 2),
    latency_ms: cell.latencyMs,
    concurrency: cell.concurrency,
    turns: options.turns,
    attune_s: null,
    plain_s: null,
    reference_s: null,
    attune_over_plain: null,
    attune_over_reference: null,
    dialogues_per_s: null,
    calls_per_s: null,
    llm_calls: null,
    http_connections: null,
    plain_calls_per_s: null,
    p50_ms: null,
    p95_ms: null,
    plain_p50_ms: null,
    plain_p95_ms: null,
    orchestration_p50_ms: null,
    orchestration_p95_ms: null,
    p50_ms_by_turn: null,
    gaps_ms: null,
    plain_gaps_ms: null,
    worker_rss_mb: null,
    dev_server_rss_mb: null,
    cpu_s: {},
    cpu_ms_per_call: null,
    plain_cpu_ms_per_call: null,
    breakdown_ms: null,
    history_events_per_workflow: null,
    workflow_task_timeouts: null,
    workflow_task_failures: null,
    payload_kb_per_workflow: null,
    reference_measured_s: null,
    reference_extrapolated: null,
    reference_sequential_measured_fraction: null,
    dev_server: [
      options.db === 'memory' ? 'in-memory SQLite' : 'SQLite file',
      ...options.sqlitePragmas.map((p) => `pragma ${p}`),
      ...options.dynamicConfig,
    ].join(', '),
    workflow_bundle: options.bundle,
    worker_processes: options.workerProcesses,
    worker_overrides: Object.fromEntries(options.workerOverrides.map((o) => [`${o.queue}.${o.key}`, o.value])),
    worker_limits: {
      maxConcurrentWorkflowTaskExecutions: LIMITS.maxConcurrentWorkflowTasks,
      maxCachedWorkflows: LIMITS.maxCachedWorkflows,
      policyMaxConcurrency: cell.concurrency,
      simulatorMaxConcurrency: cell.concurrency,
    },
    local: null,
    turn: null,
    turn_local: null,
  };

  const stack = stacks.attune;
  if (stack) {
    progress('attune: start', { latency_ms: cell.latencyMs, concurrency: cell.concurrency });
    const a = await runAttune(ctx, cell, stack, `attune-${tag}`);
    const turns = a.timings.flatMap((t) => t.turns);
    const added = addedLatencies(turns, cell.latencyMs);
    const orchestration = turns.map((t) => t.ms - t.llmMs);
    const calls = a.timings.flatMap((t) => t.calls);
    const wfts = a.timings.flatMap((t) => t.workflowTasks);
    Object.assign(entry, {
      attune_s: round(a.wallS, 3),
      dialogues_per_s: round(cell.concurrency / a.wallS, 2),
      calls_per_s: round(a.calls / a.wallS, 1),
      llm_calls: a.calls,
      http_connections: a.connections,
      p50_ms: round(percentile(added, 50), 1),
      p95_ms: round(percentile(added, 95), 1),
      orchestration_p50_ms: round(percentile(orchestration, 50), 1),
      orchestration_p95_ms: round(percentile(orchestration, 95), 1),
      worker_rss_mb: a.workerPeakMb,
      dev_server_rss_mb: a.devServerPeakMb,
      breakdown_ms: {
        activity_queue: round(mean(calls.map((c) => c.queueMs)), 1),
        activity_overhead: round(mean(calls.map((c) => c.activityOverheadMs)), 1),
        workflow_task_round_trip: round(mean(calls.map((c) => c.workflowTaskMs)), 1),
        workflow_task_dispatch: round(mean(wfts.map((w) => w.dispatchMs)), 1),
        workflow_task_run: round(mean(wfts.map((w) => w.runMs)), 1),
      },
      p50_ms_by_turn: Array.from({ length: options.turns }, (_, k) =>
        round(
          percentile(
            a.timings.map((t) => (t.turns[k] ? t.turns[k].ms - cell.latencyMs * t.turns[k].calls : NaN)),
            50,
          ),
          1,
        ),
      ),
      history_events_per_workflow: round(mean(a.timings.map((t) => t.events)), 1),
      workflow_task_timeouts: a.timings.reduce((n, t) => n + t.workflowTaskTimeouts, 0),
      workflow_task_failures: a.timings.reduce((n, t) => n + t.workflowTaskFailures, 0),
      payload_kb_per_workflow: round(mean(a.timings.map((t) => t.payloadBytes)) / 1024, 1),
      gaps_ms: a.gaps,
    });
    entry.cpu_s.attune_worker = a.cpu.worker === null ? null : round(a.cpu.worker, 2);
    entry.cpu_s.attune_dev_server = a.cpu.devServer === null ? null : round(a.cpu.devServer, 2);
    entry.cpu_s.attune_fake_and_client = round(a.cpu.parent, 2);
    // CPU that other processes on the machine used meanwhile (this is a shared 2-core box).
    entry.cpu_s.attune_other_processes =
      a.cpu.machine === null
        ? null
        : round(a.cpu.machine - (a.cpu.worker ?? 0) - (a.cpu.devServer ?? 0) - a.cpu.parent, 2);
    entry.cpu_ms_per_call = round((((a.cpu.worker ?? 0) + (a.cpu.devServer ?? 0) + a.cpu.parent) * 1000) / a.calls, 2);
    progress('attune: done', {
      latency_ms: cell.latencyMs,
      concurrency: cell.concurrency,
      wall_s: entry.attune_s,
      calls_per_s: entry.calls_per_s,
      p50_ms: entry.p50_ms,
      p95_ms: entry.p95_ms,
      worker_rss_mb: entry.worker_rss_mb,
      dev_server_rss_mb: entry.dev_server_rss_mb,
      cpu_s: entry.cpu_s,
      gaps_ms: entry.gaps_ms,
    });
  }

  for (const [variant, { key }] of Object.entries(ALTERNATIVES)) {
    const alternative = stacks.alternatives[key];
    if (!alternative) continue;
    progress(`${variant}: start`, { latency_ms: cell.latencyMs, concurrency: cell.concurrency });
    const a = await runAttune(ctx, cell, alternative, `${key}-${tag}`);
    const cpu_s = {
      attune_worker: a.cpu.worker === null ? null : round(a.cpu.worker, 2),
      attune_dev_server: a.cpu.devServer === null ? null : round(a.cpu.devServer, 2),
      attune_fake_and_client: round(a.cpu.parent, 2),
      attune_other_processes:
        a.cpu.machine === null
          ? null
          : round(a.cpu.machine - (a.cpu.worker ?? 0) - (a.cpu.devServer ?? 0) - a.cpu.parent, 2),
    };
    const variantEntry: VariantEntry = {
      attune_s: round(a.wallS, 3),
      attune_over_plain: null,
      calls_per_s: round((cell.concurrency * (3 * options.turns - 1)) / a.wallS, 1),
      repeated_calls: a.calls - cell.concurrency * (3 * options.turns - 1),
      worker_rss_mb: a.workerPeakMb,
      dev_server_rss_mb: a.devServerPeakMb,
      cpu_s,
      cpu_ms_per_call: round((((a.cpu.worker ?? 0) + (a.cpu.devServer ?? 0) + a.cpu.parent) * 1000) / a.calls, 2),
      history_events_per_workflow: round(mean(a.timings.map((t) => t.events)), 1),
      payload_kb_per_workflow: round(mean(a.timings.map((t) => t.payloadBytes)) / 1024, 1),
      gaps_ms: a.gaps,
    };
    entry[key] = variantEntry;
    progress(`${variant}: done`, {
      latency_ms: cell.latencyMs,
      concurrency: cell.concurrency,
      wall_s: variantEntry.attune_s,
      calls_per_s: variantEntry.calls_per_s,
      repeated_calls: variantEntry.repeated_calls,
      cpu_s,
      gaps_ms: variantEntry.gaps_ms,
    });
  }

  if (options.variants.has('plain')) {
    progress('plain: start', { latency_ms: cell.latencyMs, concurrency: cell.concurrency });
    ctx.fake.behaviour.latencyMs = cell.latencyMs;
    const cpu0 = { loop: cpuSeconds(ctx.loops.pid), parent: process.cpuUsage(), machine: systemBusySeconds() };
    const specs = specsFor(ctx.scenarios, cell.concurrency, `plain-${tag}`);
    const recorded0 = ctx.fake.calls.length;
    const startedAtMs = Date.now();
    const p = await runLoop(ctx, { kind: 'plain', id: index * 10 + 1, configSet, maxTurns: options.turns, specs });
    const loopCpu = cpuSeconds(ctx.loops.pid);
    const parentCpu = process.cpuUsage(cpu0.parent);
    const machineCpu = systemBusySeconds();
    const added = addedLatencies(p.turns, cell.latencyMs);
    Object.assign(entry, {
      plain_s: round(p.wallS, 3),
      plain_calls_per_s: round(p.calls / p.wallS, 1),
      plain_p50_ms: round(percentile(added, 50), 1),
      plain_p95_ms: round(percentile(added, 95), 1),
      plain_gaps_ms: dialogueGaps(
        ctx.fake.calls.slice(recorded0),
        specs.map((s) => s.seed),
        options.turns,
        cell.latencyMs,
        startedAtMs,
        null,
      ),
    });
    entry.cpu_s.plain_loop = loopCpu !== null && cpu0.loop !== null ? round(loopCpu - cpu0.loop, 2) : null;
    entry.cpu_s.plain_fake = round((parentCpu.user + parentCpu.system) / 1e6, 2);
    if (machineCpu !== null && cpu0.machine !== null)
      entry.cpu_s.plain_other_processes = round(
        machineCpu - cpu0.machine - (entry.cpu_s.plain_loop ?? 0) - entry.cpu_s.plain_fake,
        2,
      );
    entry.plain_cpu_ms_per_call = round((((entry.cpu_s.plain_loop ?? 0) + entry.cpu_s.plain_fake) * 1000) / p.calls, 2);
    if (entry.llm_calls !== null && entry.llm_calls !== p.calls)
      progress('warning: plain made a different number of calls', { attune: entry.llm_calls, plain: p.calls });
    progress('plain: done', {
      latency_ms: cell.latencyMs,
      concurrency: cell.concurrency,
      wall_s: entry.plain_s,
      calls_per_s: entry.plain_calls_per_s,
      gaps_ms: entry.plain_gaps_ms,
    });
  }

  if (options.variants.has('reference')) {
    progress('reference: start', { latency_ms: cell.latencyMs, concurrency: cell.concurrency });
    ctx.fake.behaviour.latencyMs = cell.latencyMs;
    const r = (await runLoop(ctx, {
      kind: 'reference',
      id: index * 10 + 2,
      configSet,
      maxTurns: options.turns,
      specs: specsFor(ctx.scenarios, cell.concurrency, `ref-${tag}`),
      budgetS: options.referenceBudgetS,
      sparse: cell.latencyMs >= 500,
    })) as ReferenceResult;
    Object.assign(entry, {
      reference_s: round(r.wallS, 3),
      reference_measured_s: round(r.measuredS, 3),
      reference_extrapolated: r.extrapolated,
      reference_sequential_measured_fraction: round(r.sequentialMeasuredFraction, 4),
    });
    progress('reference: done', {
      latency_ms: cell.latencyMs,
      concurrency: cell.concurrency,
      wall_s: entry.reference_s,
      measured_s: entry.reference_measured_s,
      extrapolated: r.extrapolated,
    });
  }

  for (const variant of [entry.local, entry.turn, entry.turn_local]) {
    if (variant && entry.plain_s !== null) variant.attune_over_plain = round(variant.attune_s / entry.plain_s, 3);
  }
  if (entry.attune_s !== null && entry.plain_s !== null)
    entry.attune_over_plain = round(entry.attune_s / entry.plain_s, 3);
  if (entry.attune_s !== null && entry.reference_s !== null)
    entry.attune_over_reference = round(entry.attune_s / entry.reference_s, 4);
  return entry;
}

// ---------------------------------------------------------------------------------------------

function fmt(value: number | null | boolean, digits = 2): string {
  if (value === null || typeof value === 'boolean') return value === null ? '-' : String(value);
  if (!Number.isFinite(value)) return '-';
  return value.toFixed(digits);
}

function table(entries: Entry[]): string {
  const header = [
    'L ms',
    'C',
    'attune s',
    'plain s',
    'ref s',
    'att/(a)',
    'att/(b)',
    'dlg/s',
    'calls/s',
    'local s',
    'loc/(a)',
    'loc calls/s',
    'turn s',
    'turn/(a)',
    'turn calls/s',
    'turn-local s',
    'tl/(a)',
    'tl calls/s',
    'p50 ms',
    'p95 ms',
    'orch p50',
    'worker MB',
    'server MB',
    'others',
  ];
  const rows = entries.map((e) => [
    String(e.latency_ms),
    String(e.concurrency),
    fmt(e.attune_s),
    fmt(e.plain_s),
    e.reference_s === null ? '-' : `${fmt(e.reference_s, 1)}${e.reference_extrapolated ? '*' : ''}`,
    fmt(e.attune_over_plain, 3),
    fmt(e.attune_over_reference, 4),
    fmt(e.dialogues_per_s),
    fmt(e.calls_per_s, 0),
    ...[e.local, e.turn, e.turn_local].flatMap((v) => [
      fmt(v?.attune_s ?? null),
      fmt(v?.attune_over_plain ?? null, 3),
      fmt(v?.calls_per_s ?? null, 0),
    ]),
    fmt(e.p50_ms, 1),
    fmt(e.p95_ms, 1),
    fmt(e.orchestration_p50_ms, 1),
    fmt(e.worker_rss_mb, 0),
    fmt(e.dev_server_rss_mb, 0),
    fmt(
      e.cpu_s.attune_other_processes !== undefined && e.cpu_s.attune_other_processes !== null && e.attune_s
        ? e.cpu_s.attune_other_processes / e.attune_s
        : null,
      2,
    ),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  const notes = [
    'local = attune with rollout.llmCalls=local (LLM calls as local activities); loc/(a) = local / plain loop;',
    'turn = attune with rollout.activityPer=turn (an activity per dialogue turn); turn-local = both; tl/(a) = turn-local / plain loop;',
    'att/(a) = attune / plain loop; att/(b) = attune / reference loop; p50/p95 = added latency per turn (turn wall - L x calls);',
    'orch p50 = turn wall - HTTP time measured by the activities; MB = peak RSS during the timed run;',
    'others = CPU cores other processes on the machine used during the attune run (0 = undisturbed).',
    ...(entries.some((e) => e.reference_extrapolated)
      ? [
          '* reference partly extrapolated: sequential simulator calls timed up to --reference-budget per cell, the rest counted at the measured mean.',
        ]
      : []),
  ];
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line), '', ...notes].join('\n');
}

let httpConnections = 0;

/**
 * The fake's HTTP server sends a 1 s keep-alive hint (right for short-lived test clients). Node's
 * fetch (undici) subtracts a 1 s safety threshold from such hints, so every connection would be
 * closed after one request and each LLM call would pay a new TCP connection, unlike a real
 * inference server (uvicorn: 5 s, vLLM/OpenAI: longer). The benchmark raises the hint and counts
 * connections (reported per variant).
 */
function tuneFakeServer(fake: FakeOpenAIServer, keepAliveMs: number): void {
  const server = (fake as unknown as { server: Server }).server;
  server.keepAliveTimeout = keepAliveMs;
  server.on('connection', () => {
    httpConnections++;
  });
}

async function main(): Promise<void> {
  let options: Options | null;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${HELP}\n`);
    process.exit(2);
  }
  if (!options) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const opts = options;
  const started = Date.now();
  const workdir = mkdtempSync(join(tmpdir(), 'attune-bench-orch-'));
  const children = new Set<Child>();
  let fake: FakeOpenAIServer | null = null;
  let loops: Child | null = null;
  const cleanup = async () => {
    for (const c of children) c.kill();
    loops?.kill();
    for (const [server, connection] of liveServers) {
      await connection.close().catch(() => undefined);
      await server.stop().catch(() => undefined);
    }
    await fake?.close().catch(() => undefined);
    rmSync(workdir, { recursive: true, force: true });
  };
  const watchdog = setTimeout(() => {
    progress('error: --max-minutes reached; stopping', { max_minutes: opts.maxMinutes });
    void cleanup().finally(() => process.exit(1));
  }, opts.maxMinutes * 60_000);
  watchdog.unref();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`stopping on ${signal}`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    const scenarios = requireScenarioLibrary(join(REPO_ROOT, 'scenarios', 'train')).filter((s) => s.firstMessage);
    if (scenarios.length === 0) throw new Error('no training scenario with a first message');
    progress('bundling workflows');
    const bundle = await bundleWorkflows(
      opts.bundle === 'full' ? undefined : join(__dirname, 'rolloutOnlyWorkflows.ts'),
    );
    const bundleCodePath = join(workdir, 'workflow-bundle.js');
    const bundleSourceMapPath = join(workdir, 'workflow-bundle.js.map');
    writeFileSync(bundleCodePath, bundle.code);
    writeFileSync(bundleSourceMapPath, bundle.sourceMap);

    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 0 }) });
    tuneFakeServer(fake, opts.keepAliveMs);
    loops = Child.start('loops', {}, opts.profileDir);
    await loops.next(isReady, 60_000);
    const ctx: RunContext = {
      options: opts,
      fake,
      loops,
      scenarios,
      bundleCodePath,
      bundleSourceMapPath,
      children,
      workdir,
    };

    // Warm the loop process once (JIT, connection pool).
    if (opts.variants.has('plain') || opts.variants.has('reference')) {
      fake.behaviour.latencyMs = 0;
      await runLoop(ctx, {
        kind: 'plain',
        id: 0,
        configSet: configSetFor(8, 0, fake.url, join(workdir, 'warm'), 2),
        maxTurns: 2,
        specs: specsFor(scenarios, 8, 'warm'),
      });
    }

    const cellCount = opts.latencies.length * opts.concurrency.length;
    progress('grid', {
      cells: cellCount,
      latencies: opts.latencies,
      concurrency: opts.concurrency,
      turns: opts.turns,
      variants: [...opts.variants],
    });
    const entries: Entry[] = [];
    // Per concurrency level: a fresh dev server (its CPU per call grows with the workflows it has
    // stored, so cells must not inherit each other's) and one worker process (its peak RSS is reset
    // before each cell).
    for (const concurrency of opts.concurrency) {
      const home = join(workdir, `c${concurrency}`);
      mkdirSync(home, { recursive: true });
      const configSet = configSetFor(concurrency, Math.max(...opts.latencies), fake.url, home, opts.turns);
      const stacks: { attune: AttuneStack | null; alternatives: AlternativeStacks } = {
        attune: null,
        alternatives: {},
      };
      try {
        // Both stacks stay up for the whole level; an idle dev server and worker use next to no CPU.
        if (opts.variants.has('attune')) stacks.attune = await startStack(ctx, join(home, 'activity'), configSet);
        for (const [variant, { key, set }] of Object.entries(ALTERNATIVES)) {
          if (opts.variants.has(variant))
            stacks.alternatives[key] = await startStack(ctx, join(home, key), [...configSet, ...set]);
        }
        for (const latencyMs of opts.latencies) {
          entries.push(await runCell(ctx, { latencyMs, concurrency }, entries.length + 1, stacks, configSet));
          progress('cell done', {
            cell: entries.length,
            of: cellCount,
            elapsed_s: Math.round((Date.now() - started) / 1000),
          });
        }
      } finally {
        for (const stack of [stacks.attune, ...Object.values(stacks.alternatives)])
          if (stack) await stopStack(ctx, stack);
        rmSync(home, { recursive: true, force: true });
      }
    }
    entries.sort((a, b) => a.latency_ms - b.latency_ms || a.concurrency - b.concurrency);
    mkdirSync(dirname(opts.out), { recursive: true });
    const kept =
      opts.update && existsSync(opts.out)
        ? (JSON.parse(readFileSync(opts.out, 'utf8')) as Entry[]).filter(
            (old) => !entries.some((e) => e.latency_ms === old.latency_ms && e.concurrency === old.concurrency),
          )
        : [];
    const all = [...kept, ...entries].sort((a, b) => a.latency_ms - b.latency_ms || a.concurrency - b.concurrency);
    writeFileSync(opts.out, `${JSON.stringify(all, null, 2)}\n`);
    process.stdout.write(
      `\nOrchestration benchmark: ${opts.turns} turns per dialogue, ${cpus().length} CPUs, dev server: ${entries[0]?.dev_server ?? ''}\n\n${table(all)}\n\nwrote ${opts.out}${kept.length > 0 ? ` (${entries.length} cells measured now, ${kept.length} kept from before)` : ''} (${Math.round((Date.now() - started) / 1000)} s)\n`,
    );
  } finally {
    clearTimeout(watchdog);
    await loops?.stop().catch(() => undefined);
    await cleanup();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
