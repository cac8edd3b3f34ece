import type { Worker } from '@temporalio/worker';
import { runWorkers, shutdownWorkers } from '../../src/workers/runWorkers.js';

/** The workers a test rig runs in-process: started together, and stopped by awaiting their shutdown. */
export class RunningWorkers {
  private workers: Worker[] = [];
  private running: Promise<void> | null = null;

  start(workers: Worker[]): void {
    this.workers = workers;
    this.running = runWorkers(workers);
  }

  async stop(): Promise<void> {
    shutdownWorkers(this.workers);
    await this.running;
    this.running = null;
    this.workers = [];
  }
}
