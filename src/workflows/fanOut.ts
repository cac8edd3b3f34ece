/**
 * Runs `work` over `items` with at most `limit` in flight, in item order, keeping every
 * result (or error). Deterministic: uses only promises, no timers.
 */
export async function boundedFanOut<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<({ ok: true; value: R } | { ok: false; error: unknown })[]> {
  const results: ({ ok: true; value: R } | { ok: false; error: unknown })[] = new Array(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = { ok: true, value: await work(items[index] as T, index) };
      } catch (error) {
        results[index] = { ok: false, error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  return results;
}

/** Runs `work` counted in `progress`: in flight while it runs, then done or failed. */
export async function counted<R>(
  progress: { inFlight: number; done: number; failed: number },
  work: () => Promise<R>,
): Promise<R> {
  progress.inFlight++;
  try {
    const value = await work();
    progress.done++;
    return value;
  } catch (error) {
    progress.failed++;
    throw error;
  } finally {
    progress.inFlight--;
  }
}

/** The innermost message of a (child workflow / activity) failure chain, for reports. */
export function failureMessage(error: unknown): string {
  const messages: string[] = [];
  let current: unknown = error;
  while (current instanceof Error && messages.length < 6) {
    messages.push(current.message);
    current = (current as Error & { cause?: unknown }).cause;
  }
  return messages.filter(Boolean).join(' <- ') || String(error);
}
