/**
 * In-process limits for LLM calls that run as local activities (`rollout.llmCalls: local`). There
 * the calls skip their endpoint's task queue, so the queue's worker slots and rate limit no longer
 * apply; this gives each endpoint the same concurrency and requests-per-second bounds inside the
 * rollout worker instead (per worker process, where the queue limit was cluster-wide).
 */
export interface EndpointLimits {
  maxConcurrency: number;
  requestsPerSecond?: number | undefined;
}

/** A counting semaphore with an optional minimum spacing between acquisitions. */
export class EndpointGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private nextStartAt = 0;

  constructor(private readonly limits: EndpointLimits) {}

  get inFlight(): number {
    return this.active;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private async acquire(): Promise<void> {
    if (this.active >= this.limits.maxConcurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    if (this.limits.requestsPerSecond !== undefined) {
      const now = Date.now();
      const startAt = Math.max(now, this.nextStartAt);
      this.nextStartAt = startAt + 1000 / this.limits.requestsPerSecond;
      if (startAt > now) await new Promise((resolve) => setTimeout(resolve, startAt - now));
    }
  }

  private release(): void {
    const next = this.waiting.shift();
    // The slot passes straight to the next waiter, so `active` stays the same.
    if (next) next();
    else this.active--;
  }
}

/** The same activity functions, each call passing through `gate`. */
export function gated<T extends Record<string, (...args: never[]) => Promise<unknown>>>(
  activities: T,
  gate: EndpointGate,
): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    out[name] = (...args: never[]) => gate.run(() => fn(...args));
  }
  return out as T;
}
