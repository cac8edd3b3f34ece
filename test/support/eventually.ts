import { isTransientConnectionError } from '../../src/temporal/transientErrors.js';

/** Polls `probe` until it returns a value: for what the server writes asynchronously, e.g. SQL visibility. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * A query's answer, asked again while the server says no worker took it in time (DEADLINE_EXCEEDED:
 * on a loaded machine a query to an ended workflow waits for a worker to replay its history). Any
 * other error, or no answer within `timeoutMs`, fails.
 */
export async function answered<T>(query: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await query();
    } catch (error) {
      if (!isTransientConnectionError(error) || Date.now() > deadline) throw error;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
