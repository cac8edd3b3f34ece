import type { NativeConnection, Worker } from '@temporalio/worker';
import type { Logger } from '../log.js';
import type { TemporalHandle } from '../temporal/connect.js';
import { shutdownWorkers } from '../workers/runWorkers.js';
import type { LocalModels } from './localModels.js';
import type { LocalTrainer } from './localTrainer.js';

/**
 * How long `attune dev`'s workers get to finish the calls in flight before the servers under them
 * stop. A worker's own grace (30 s; 10 minutes for a step) is for a worker that leaves a server
 * running; here the server goes too, so what is not done by then resumes from its journal or the
 * trainer's last commit when `attune dev` starts again.
 */
export const DEV_WORKERS_DRAIN_MS = 5_000;

export interface DevEnvironment {
  workers: Worker[];
  running: Promise<void>;
  connection: NativeConnection;
  temporal: TemporalHandle;
  trainer: LocalTrainer;
  models: LocalModels;
  log: Logger;
}

/** Resolves true when `work` settles within `ms`, false otherwise (it goes on unwatched). */
function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Stops what `attune dev` started, within a bound whatever is in flight: the workers get
 * DEV_WORKERS_DRAIN_MS, then the Temporal dev server, the trainer and the local model server stop
 * together. A second SIGINT or SIGTERM exits at once (the child watchdog stops the children then).
 */
export async function stopDevEnvironment(env: DevEnvironment): Promise<void> {
  const leaveNow = () => process.exit(130);
  process.once('SIGINT', leaveNow);
  process.once('SIGTERM', leaveNow);
  shutdownWorkers(env.workers);
  const running = env.running.catch((error: unknown) => env.log.error('worker failed', { error: String(error) }));
  const drained = await settlesWithin(running, DEV_WORKERS_DRAIN_MS);
  if (!drained)
    env.log.warn('workers still had calls in flight; stopping the servers under them (they resume on the next start)', {
      waitedMs: DEV_WORKERS_DRAIN_MS,
    });
  const stops = [env.temporal.close(), env.trainer.close(), env.models.close()];
  const results = await Promise.allSettled(stops);
  for (const result of results)
    if (result.status === 'rejected') env.log.error('could not stop a service', { error: String(result.reason) });
  // A connection still held by a worker cannot close; the process exits after this anyway.
  if (drained) await env.connection.close().catch(() => undefined);
}
