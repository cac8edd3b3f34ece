/**
 * Load benchmark: many concurrent rollouts on the PostgreSQL Temporal cluster, to size the orchestration.
 *
 *   npm run bench:load [-- --quick | --dialogues 1024 --turns 8 --set rollout.llmCalls=local ...]
 *
 * Brings up scripts/temporal-cluster (PostgreSQL + frontend, history, matching, worker), the Attune
 * LLM-I/O workers in child processes (bench/orchestration's `workers` child) and the fake OpenAI
 * server in this process, answering with a seeded long-tailed latency and a share of HTTP 500s
 * (latencyModel.ts). Starts all dialogues at once, waits for them, and reports what they cost:
 * options.ts (command line), cluster.ts (up/down), dialogues.ts (start, wait, describe),
 * processes.ts (CPU and RSS from /proc), calls.ts (the fake's view), results.ts (JSON and table).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { loadConfig } from '../../src/config/load.js';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import { REPO_ROOT } from '../../src/paths.js';
import { requireScenarioLibrary } from '../../src/scenarios/library.js';
import { temporalClient } from '../../src/temporal/connect.js';
import { bundleWorkflows } from '../../src/workers/workflowSource.js';
import { FakeOpenAIServer } from '../../test/support/fakeOpenAI.js';
import { Child, isReady } from '../orchestration/childProcess.js';
import { tuneFakeServer } from '../orchestration/fakeServer.js';
import type { WorkersJob } from '../orchestration/protocol.js';
import { specsFor } from '../orchestration/runContext.js';
import { configSetFor } from '../orchestration/stack.js';
import { callFigures } from './calls.js';
import { Cluster, SERVICES } from './cluster.js';
import { awaitResults, describeRollouts, startRollouts, waitForDialogues } from './dialogues.js';
import { latencyCapMs, LoadModel, lognormal } from './latencyModel.js';
import { HELP, parseOptions, type Options } from './options.js';
import { commandName, cpuDelta, cpuSnapshot, peaksMb, resetPeaks, type ProcessGroups } from './processes.js';
import { progress } from './progress.js';
import { cpuFigures, meanMax, table, writeResults, type LoadParameters, type LoadResults } from './results.js';

/** Time kept back from --max-minutes for reading the results and taking everything down. */
const RESERVE_MS = 2 * 60_000;
/** Seeds of the warm-up's dialogues: apart from the timed run's (1..N), so no request of one is a request of the other. */
const WARM_SEED = 1_000_000;

function message(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

async function main(): Promise<number> {
  let options: Options | null;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${HELP}\n`);
    return 2;
  }
  if (!options) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const opts = options;
  const startedAt = Date.now();
  const hardDeadline = startedAt + opts.maxMinutes * 60_000;
  const workdir = mkdtempSync(join(tmpdir(), 'attune-bench-load-'));
  // Under /tmp, as scripts/test-postgres.sh does, not TMPDIR: PostgreSQL runs as the `postgres` user
  // when we are root, and must reach its data directory (a test's TMPDIR is private to root).
  const cluster = new Cluster(mkdtempSync('/tmp/attune-load-cluster-'));
  const workers: Child[] = [];
  let fake: FakeOpenAIServer | null = null;
  let connection: Connection | null = null;

  // What is known so far, written as the results file if the run ends early.
  let partial: Partial<LoadResults> = { benchmark: 'load' };
  const writePartial = (reason: string) => {
    try {
      writeResults(opts.out, { ...partial, ok: false, errors: [...(partial.errors ?? []), reason] } as LoadResults);
      progress('wrote partial results', { out: opts.out });
    } catch (error) {
      progress('could not write the results', { level: 'error', error: message(error) });
    }
  };

  /** Set once the watchdog or a signal is taking the run down: errors after that are its consequence. */
  let stopping = false;
  let cleaning: Promise<void> | null = null;
  /** Each step on its own, so one that fails leaves the others to run. */
  const step = async (what: string, fn: () => unknown) => {
    try {
      await fn();
    } catch (error) {
      progress(`cleanup: ${what} failed`, { level: 'error', error: message(error) });
    }
  };
  const cleanup = () =>
    (cleaning ??= (async () => {
      // A call still retrying on the client's connection (after Ctrl-C, say) throws from a timer once
      // the connection is closed: from here on that is logged, not fatal, so the cleanup goes on.
      process.on('uncaughtException', (error) =>
        progress('error during the cleanup', { level: 'error', error: message(error) }),
      );
      await Promise.all(workers.map((w) => step('stopping a worker process', () => w.stop(10_000))));
      for (const w of workers) w.kill();
      await step('closing the fake LLM server', () => fake?.close());
      await step('taking the cluster down', () => cluster.down());
      await step('closing the client', () => connection?.close());
      await step('removing the work directory', () =>
        rmSync(workdir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }),
      );
      progress('cleaned up');
    })());
  const watchdog = setTimeout(() => {
    stopping = true;
    progress('error: --max-minutes reached; stopping', { level: 'error', max_minutes: opts.maxMinutes });
    writePartial(`--max-minutes ${opts.maxMinutes} reached before the run ended`);
    void cleanup().finally(() => process.exit(1));
  }, opts.maxMinutes * 60_000);
  watchdog.unref();
  // Nothing left over (a long poll of a closed connection, say) may end the process before the cleanup.
  process.on('unhandledRejection', (reason) =>
    progress('unhandled rejection', { level: 'error', error: message(reason) }),
  );
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stopping = true;
      progress(`stopping on ${signal}`, { level: 'error' });
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    const scenarios = requireScenarioLibrary(join(REPO_ROOT, 'scenarios', 'train')).filter((s) => s.firstMessage);
    if (scenarios.length === 0) throw new Error('no training scenario with a first message');

    // The fake LLM, its latency and failure model (inactive until the timed run).
    const modelParams = { medianMs: opts.medianMs, p99Ms: opts.p99Ms, failureRate: opts.failureRate, seed: opts.seed };
    const model = new LoadModel(modelParams);
    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 0 }) });
    tuneFakeServer(fake, 30_000);
    model.install(fake);

    // The workers' and the starter's config: bench/orchestration's, with an endpoint slot for every
    // dialogue in each worker process (however the server spreads the calls over them), then --set.
    const home = join(workdir, 'home');
    mkdirSync(home, { recursive: true });
    const configSet = [
      ...configSetFor(opts.dialogues, opts.p99Ms, fake.url, home, opts.turns),
      'temporal.taskQueuePrefix=bench-load-',
      ...opts.set,
    ];
    const config = loadConfig({ env: {}, set: configSet });
    const queues = taskQueuesFor(config.temporal.taskQueuePrefix);
    const { mu, sigma } = lognormal(opts.medianMs, opts.p99Ms);
    const parameters: LoadParameters = {
      dialogues: opts.dialogues,
      turns: opts.turns,
      worker_processes: opts.workerProcesses,
      latency_model: {
        distribution: 'lognormal',
        median_ms: opts.medianMs,
        p99_ms: opts.p99Ms,
        mu: Number(mu.toFixed(4)),
        sigma: Number(sigma.toFixed(4)),
        cap_ms: latencyCapMs(modelParams),
        seed: opts.seed,
      },
      failure_rate: opts.failureRate,
      mode: { llmCalls: config.rollout.llmCalls, activityPer: config.rollout.activityPer },
      set: opts.set,
      endpoint_max_concurrency: { policy: config.policy.maxConcurrency, simulator: config.simulator.maxConcurrency },
      server: 'postgres-cluster',
      machine_cores: cpus().length,
      load_average_1m: { start: Number(loadavg()[0]!.toFixed(2)), end: null },
      quick: opts.quick,
    };
    partial = { ...partial, parameters, dialogues_started: 0, dialogues_completed: 0 };
    progress('parameters', { ...parameters });

    // The cluster comes up (about a minute, mostly waiting) while the workflows are bundled.
    progress('bringing up the PostgreSQL Temporal cluster', { state: cluster.stateDir });
    const [address, bundle] = await Promise.all([cluster.up(), bundleWorkflows()]);
    const bundleCodePath = join(workdir, 'workflow-bundle.js');
    const bundleSourceMapPath = join(workdir, 'workflow-bundle.js.map');
    writeFileSync(bundleCodePath, bundle.code);
    writeFileSync(bundleSourceMapPath, bundle.sourceMap);
    const servicePids = cluster.servicePids();
    const postmaster = cluster.postmasterPid();
    progress('cluster up', {
      address,
      services: Object.fromEntries(
        SERVICES.map((s) => [s, { pid: servicePids[s], comm: commandName(servicePids[s]) }]),
      ),
      postmaster: { pid: postmaster, comm: commandName(postmaster) },
    });

    const job: WorkersJob = {
      address,
      namespace: 'default',
      configSet,
      bundleCodePath,
      bundleSourceMapPath,
      workerOverrides: [],
    };
    for (let i = 0; i < opts.workerProcesses; i++) {
      const worker = Child.start('workers', { BENCH_WORKERS_JOB: JSON.stringify(job) });
      workers.push(worker);
      await worker.next(isReady, 120_000);
    }
    progress('workers up', { pids: workers.map((w) => w.pid) });
    connection = await Connection.connect({ address });
    const client = temporalClient(connection, 'default');

    // Warm-up: bundle loaded in the workers, connections open, code paths compiled; no latency, no failures.
    const warm = specsFor(scenarios, Math.min(8, opts.dialogues), 'load-warm').map((s, i) => ({
      ...s,
      seed: WARM_SEED + i,
    }));
    const warmResults = await awaitResults(
      client,
      await startRollouts(client, config, queues.rollouts, warm, 1),
      Math.min(Date.now() + 180_000, hardDeadline - RESERVE_MS),
    );
    const warmErrors = warmResults.filter((r) => r.error !== null);
    if (warmErrors.length > 0)
      throw new Error(`warm-up: ${warmErrors.length} rollouts failed: ${warmErrors[0]!.error}`);
    progress('warm-up done', { dialogues: warm.length });

    // The timed run.
    const groups: ProcessGroups = {
      temporal: SERVICES.map((s) => servicePids[s]),
      database: [postmaster],
      workers: workers.map((w) => w.pid),
    };
    const peaksReset = resetPeaks(groups.workers);
    const recorded0 = fake.calls.length;
    const draws0 = model.draws.length;
    const specs = specsFor(scenarios, opts.dialogues, 'load');
    const expectedCalls = opts.dialogues * (3 * opts.turns - 1);
    const measuredAt = new Date();
    const cpu0 = cpuSnapshot(groups);
    model.active = true;
    const t0 = Date.now();
    progress('starting dialogues', { dialogues: specs.length, turns: opts.turns });
    const handles = await startRollouts(client, config, queues.rollouts, specs, opts.turns);
    partial = { ...partial, measured_at: measuredAt.toISOString(), dialogues_started: handles.length };
    progress('dialogues started', { dialogues: handles.length, start_s: (Date.now() - t0) / 1000 });
    const waitDeadline = hardDeadline - RESERVE_MS;
    const ended = await waitForDialogues(
      client,
      queues.rollouts,
      handles.length,
      () => model.successes >= expectedCalls,
      waitDeadline,
    );
    progress('dialogues over', { by: ended, elapsed_s: (Date.now() - t0) / 1000 });
    const results = await awaitResults(client, handles, Math.max(Date.now() + 30_000, waitDeadline));
    const cpu1 = cpuSnapshot(groups);
    const peaks = peaksMb(groups.workers);
    model.active = false;
    const descriptions = await describeRollouts(handles);

    // What it measured.
    const byStatus: Record<string, number> = {};
    for (const d of descriptions) byStatus[d.status] = (byStatus[d.status] ?? 0) + 1;
    const completed = descriptions.filter((d, i) => d.status === 'COMPLETED' && results[i]!.error === null).length;
    const short = results.filter((r) => r.turns !== null && r.turns < opts.turns).length;
    const calls = callFigures(
      fake.calls.slice(recorded0),
      model.draws.slice(draws0),
      fake.successCountsByKey(),
      specs.map((s) => s.seed),
      opts.turns,
    );
    const closes = descriptions.map((d) => d.closedAtMs);
    const lastClose = closes.every((c) => c !== null) ? Math.max(...(closes as number[])) : null;
    const wallS = lastClose !== null ? (lastClose - t0) / 1000 : null;
    const cpu = cpuFigures(cpuDelta(cpu0, cpu1), calls.successful_calls);
    const described = descriptions.filter((d) => d.historyEvents !== null);
    const errors: string[] = [];
    const lost = handles.length - completed;
    if (handles.length < opts.dialogues) errors.push(`${opts.dialogues - handles.length} dialogues did not start`);
    if (lost > 0) {
      const firstError = results.find((r) => r.error !== null)?.error;
      errors.push(
        `${lost} dialogues lost (by status: ${JSON.stringify(byStatus)})${firstError ? `; first error: ${firstError}` : ''}`,
      );
    }
    if (ended === 'deadline') errors.push('the dialogues did not finish before --max-minutes (less the reserve)');
    if (calls.repeated_calls > 0)
      errors.push(
        `${calls.repeated_calls} LLM calls answered successfully more than once (${calls.repeated_requests} requests)`,
      );
    if (short > 0) errors.push(`${short} dialogues ended before ${opts.turns} turns`);
    if (!peaksReset) progress('warning: could not reset the workers\u2019 peak RSS; peaks are since their start');
    const out: LoadResults = {
      benchmark: 'load',
      measured_at: measuredAt.toISOString(),
      parameters: {
        ...parameters,
        load_average_1m: { ...parameters.load_average_1m, end: Number(loadavg()[0]!.toFixed(2)) },
      },
      ok: errors.length === 0,
      errors,
      dialogues_started: handles.length,
      dialogues_completed: completed,
      lost_dialogues: lost,
      dialogues_by_status: byStatus,
      dialogues_short: short,
      expected_calls: expectedCalls,
      ...calls,
      wall_s: wallS === null ? null : Number(wallS.toFixed(2)),
      calls_per_s: wallS === null || wallS <= 0 ? null : Number((calls.successful_calls / wallS).toFixed(2)),
      ...cpu,
      worker_rss_mb: {
        peak_per_process: peaks,
        total: peaks.every((p) => p !== null)
          ? Number((peaks as number[]).reduce((a, b) => a + b, 0).toFixed(1))
          : null,
      },
      history: {
        described: described.length,
        bytes: meanMax(described.flatMap((d) => (d.historyBytes === null ? [] : [d.historyBytes]))),
        events: meanMax(described.map((d) => d.historyEvents!)),
      },
    };
    writeResults(opts.out, out);
    process.stdout.write(`\n${table(out)}\n\nwrote ${opts.out} (${Math.round((Date.now() - startedAt) / 1000)} s)\n`);
    if (!out.ok) {
      progress('load run failed', { level: 'error', errors });
      process.stderr.write(`\nbench:load FAILED:\n${errors.map((e) => `  - ${e}`).join('\n')}\n`);
      return 1;
    }
    return 0;
  } catch (error) {
    if (stopping) return 1;
    progress('error', { level: 'error', error: message(error) });
    writePartial(error instanceof Error ? error.message : String(error));
    process.stderr.write(`\nbench:load FAILED: ${message(error)}\n`);
    return 1;
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${message(error)}\n`);
    process.exit(1);
  },
);
