import { shareOf } from '../core/workerShare.js';

/**
 * In-process limits for LLM calls that run as local activities (`rollout.llmCalls: local`). There
 * the calls skip their endpoint's task queue, so the queue's worker slots and rate limit no longer
 * apply; this gives each endpoint the same concurrency and requests-per-second bounds inside the
 * rollout worker instead. With several worker processes each takes its share (`shareWith`, kept up
 * to date by src/workers/workerCensus.ts), so that together they hold the configured limit.
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
  private limits: EndpointLimits;

  constructor(private readonly configured: EndpointLimits) {
    this.limits = configured;
  }

  get inFlight(): number {
    return this.active;
  }

  /** The limits this process holds now: the configured ones, or its share of them. */
  get current(): EndpointLimits {
    return this.limits;
  }

  /** Holds this process's share of the configured limits while `workers` processes call the endpoint. */
  shareWith(workers: number): void {
    const { maxConcurrency, requestsPerSecond } = shareOf(this.configured, workers);
    this.limits = { maxConcurrency, requestsPerSecond };
    // A larger share lets waiters in at once; a smaller one takes effect as calls end (release).
    while (this.waiting.length > 0 && this.active < this.limits.maxConcurrency) {
      this.active++;
      this.waiting.shift()!();
    }
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
    // Over a share that shrank, the slot is given up rather than passed on.
    const next = this.active > this.limits.maxConcurrency ? undefined : this.waiting.shift();
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
