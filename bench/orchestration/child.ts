/**
 * The benchmark's child processes, so each variant's LLM-calling code runs in a process of its own
 * (its peak RSS and CPU time separable) while the fake OpenAI server stays in the parent:
 *   child.ts workers  the three Attune LLM-I/O workers (rollout, policy, simulator queues)
 *   child.ts loops    the plain and reference loops, one job at a time
 * Both talk to the parent over the IPC channel and exit when it closes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { createLlmIoWorkers } from '../../src/workers/llmIoWorkers.js';
import { runWorkers, shutdownWorkers } from '../../src/workers/runWorkers.js';
import { runPlain, runReference } from './loops.js';
import type { LoopJob, ToParent, WorkersJob } from './protocol.js';

function send(message: ToParent): void {
  process.send?.(message);
}

/**
 * `--worker-option` experiments without editing src/: wraps Worker.create so that the options
 * createLlmIoWorkers builds are overridden per queue kind (all, rollouts, policy, simulator).
 */
function applyWorkerOverrides(overrides: WorkersJob['workerOverrides']): void {
  if (overrides.length === 0) return;
  const create = Worker.create.bind(Worker);
  Worker.create = (options: WorkerOptions) => {
    const queue = options.taskQueue;
    const extra: Record<string, unknown> = {};
    for (const o of overrides) {
      if (o.queue === 'all' || queue.endsWith(`attune-${o.queue === 'rollouts' ? 'rollouts' : `llm-${o.queue}`}`))
        extra[o.key] = o.value;
    }
    return create({ ...options, ...extra } as WorkerOptions);
  };
}

async function workersMode(job: WorkersJob): Promise<void> {
  installTemporalLogging('WARN');
  applyWorkerOverrides(job.workerOverrides);
  const config = loadConfig({ env: {}, set: job.configSet });
  const store = new FileArtifactStore(join(config.home, 'artifacts'));
  const connection = await NativeConnection.connect({ address: job.address });
  const workflowBundle = {
    code: readFileSync(job.bundleCodePath, 'utf8'),
    sourceMap: readFileSync(job.bundleSourceMapPath, 'utf8'),
  };
  const workers: Worker[] = await createLlmIoWorkers({
    connection,
    namespace: job.namespace,
    config,
    store,
    workflowBundle,
    identity: `bench-${process.pid}`,
  });
  const running = runWorkers(workers);
  // Wait until every worker polls; then the parent may start workflows.
  const deadline = Date.now() + 30_000;
  while (workers.some((w) => w.getState() !== 'RUNNING') && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
  const stop = async () => {
    shutdownWorkers(workers);
    await running.catch(() => undefined);
    await connection.close();
    send({ kind: 'stopped' });
    process.disconnect?.();
  };
  process.on('message', (message: { kind?: string }) => {
    if (message.kind === 'stop') void stop();
  });
  process.on('disconnect', () => {
    shutdownWorkers(workers);
    setTimeout(() => process.exit(0), 5000).unref();
  });
  running.catch((error: unknown) => {
    send({ kind: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  });
  send({ kind: 'ready', pid: process.pid });
}

function loopsMode(): void {
  process.on('message', (job: LoopJob | { kind: 'stop' }) => {
    if (job.kind === 'stop') {
      process.disconnect?.();
      return;
    }
    void (async () => {
      try {
        const config = loadConfig({ env: {}, set: job.configSet });
        const settings = rolloutSettingsFromConfig(config, { ...config.rollout.dialogue, maxTurns: job.maxTurns });
        const store = new FileArtifactStore(join(config.home, 'artifacts', job.kind));
        if (job.kind === 'plain') {
          send({ kind: 'plain-done', id: job.id, result: await runPlain(job.specs, settings, store) });
        } else {
          send({
            kind: 'reference-done',
            id: job.id,
            result: await runReference(job.specs, settings, store, job.budgetS, job.sparse),
          });
        }
      } catch (error) {
        send({ kind: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0));
  send({ kind: 'ready', pid: process.pid });
}

const mode = process.argv[2];
if (mode === 'workers') {
  const job = JSON.parse(process.env.BENCH_WORKERS_JOB ?? '{}') as WorkersJob;
  workersMode(job).catch((error: unknown) => {
    send({ kind: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  });
} else if (mode === 'loops') {
  loopsMode();
} else {
  process.stderr.write('usage: child.ts workers|loops (started by bench/orchestration/main.ts)\n');
  process.exit(2);
}
