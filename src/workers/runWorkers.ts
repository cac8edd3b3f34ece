import type { Worker } from '@temporalio/worker';

/** Runs workers until one fails or all are shut down; a failure stops the others. */
export async function runWorkers(workers: Worker[]): Promise<void> {
  try {
    await Promise.all(workers.map((w) => w.run()));
  } catch (error) {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    throw error;
  }
}

export function shutdownWorkers(workers: Worker[]): void {
  for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
}
