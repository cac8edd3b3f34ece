/**
 * How a limit on an endpoint (`maxConcurrency`, `requestsPerSecond`, `tokensPerMinute`) holds across
 * worker processes when each process makes its own calls (`rollout.llmCalls: local`, the default):
 * every live worker takes an equal share, so that together they keep the configured limit, as a user
 * reading the key expects and as an API that enforces its quota requires. Pure: the caller passes
 * what the server said of the task queue's pollers and the time.
 */

/** A poller of the rollout workers' task queue, as the server describes it. */
export interface PollerSeen {
  identity: string;
  /** When the server last saw it poll (ms since the epoch); undefined when it does not say. */
  lastAccessMs: number | undefined;
}

/**
 * The worker processes alive on the queue: distinct identities seen polling within `windowMs`, this
 * one (`self`) always among them, however late the server's view of it is.
 */
export function liveWorkerCount(pollers: readonly PollerSeen[], self: string, now: number, windowMs: number): number {
  const live = new Set([self]);
  for (const p of pollers)
    if (p.lastAccessMs !== undefined && now - p.lastAccessMs <= windowMs && p.identity) live.add(p.identity);
  return live.size;
}

export interface ShareableLimits {
  maxConcurrency: number;
  requestsPerSecond?: number | undefined;
  tokensPerMinute?: number | undefined;
}

/**
 * One worker's share of `limits` when `workers` processes split them: rates divided evenly, and
 * concurrency rounded down (never below 1, so that every worker can make progress; past
 * `maxConcurrency` workers the endpoint then sees one call per worker, which `exceeds` says).
 */
export function shareOf(
  limits: ShareableLimits,
  workers: number,
): { maxConcurrency: number; requestsPerSecond?: number; tokensPerMinute?: number; exceeds: boolean } {
  const n = Math.max(1, Math.floor(workers));
  return {
    maxConcurrency: Math.max(1, Math.floor(limits.maxConcurrency / n)),
    ...(limits.requestsPerSecond !== undefined ? { requestsPerSecond: limits.requestsPerSecond / n } : {}),
    ...(limits.tokensPerMinute !== undefined ? { tokensPerMinute: limits.tokensPerMinute / n } : {}),
    exceeds: n > limits.maxConcurrency,
  };
}
