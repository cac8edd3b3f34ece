import type { Worker } from '@temporalio/worker';

/** Something a worker process runs beside a worker: started with it, stopped when it stops. */
export interface WorkerCompanion {
  start(): void;
  stop(): Promise<void>;
}

/** `companion` runs while `worker` does: started by its `run`, stopped when that returns. */
export function alongsideWorker(worker: Worker, companion: WorkerCompanion): Worker {
  const run = worker.run.bind(worker);
  worker.run = async () => {
    companion.start();
    try {
      return await run();
    } finally {
      await companion.stop();
    }
  };
  return worker;
}
