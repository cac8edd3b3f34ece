import type { Worker } from '@temporalio/worker';
import { runWorkers, shutdownWorkers } from '../../src/workers/runWorkers.js';

/** The workers a test rig runs in-process, started in one or more batches, stopped together. */
export class RunningWorkers {
  private workers: Worker[] = [];
  private running: Promise<void>[] = [];

  start(workers: Worker[]): void {
    this.workers.push(...workers);
    this.running.push(runWorkers(workers));
  }

  async stop(): Promise<void> {
    shutdownWorkers(this.workers);
    await Promise.all(this.running);
    this.running = [];
    this.workers = [];
  }
}
