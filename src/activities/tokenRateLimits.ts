import { estimateRequestTokens, TokenBucket } from '../core/tokenBucket.js';

/**
 * Tokens-per-minute budgets of the LLM endpoints in this worker process, by role (`policy`,
 * `simulator`). Every LLM call passes here whichever way it runs (its endpoint's queue, a local
 * activity, a turn activity), so all of a process's calls to an endpoint share one budget. Like
 * `maxConcurrency`, the budget is per worker process: N workers may together use N times it.
 */
const buckets = new Map<string, TokenBucket>();

/** Sets this process's budgets from a worker's config; a role without `tokensPerMinute` has none. */
export function configureTokenRateLimits(limits: Record<string, { tokensPerMinute?: number | undefined }>): void {
  for (const [role, { tokensPerMinute }] of Object.entries(limits)) {
    if (tokensPerMinute === undefined) buckets.delete(role);
    // The same limit keeps its bucket, so a second worker set in one process does not refill it.
    else if (buckets.get(role)?.tokensPerMinute !== tokensPerMinute)
      buckets.set(role, new TokenBucket(tokensPerMinute, Date.now()));
  }
}

export interface TokenBudgeted<T> {
  result: T;
  /** Milliseconds the call waited for its budget before it started (0: none). */
  waitMs: number;
}

/**
 * Runs `call` within `role`'s budget: charges the request's estimate first (waiting while the
 * budget is spent), then settles with the usage the response reports. A failed call keeps its
 * charge: the provider may have counted it, and an outage then slows the retries too.
 */
export async function withTokenBudget<T>(
  role: string,
  request: { messages: readonly { content: string }[]; maxTokens: number },
  call: () => Promise<T>,
  usedTokens: (result: T) => number | null,
): Promise<TokenBudgeted<T>> {
  const bucket = buckets.get(role);
  if (!bucket) return { result: await call(), waitMs: 0 };
  const estimate = estimateRequestTokens(request.messages, request.maxTokens);
  const startedAt = Date.now();
  const waitMs = bucket.reserve(estimate, startedAt);
  if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
  const result = await call();
  const used = usedTokens(result);
  if (used !== null) bucket.settle(estimate, used, Date.now());
  return { result, waitMs: waitMs > 0 ? Date.now() - startedAt : 0 };
}
