import { estimateRequestTokens, TokenBucket } from '../core/tokenBucket.js';

/**
 * Tokens-per-minute budgets of the LLM endpoints in this worker process, by role (`policy`,
 * `simulator`). Every LLM call passes here whichever way it runs (its endpoint's queue, a local
 * activity, a turn activity), so all of a process's calls to an endpoint share one budget. With
 * several worker processes each holds its share (`shareTokenRateLimits`, kept up to date by
 * src/workers/workerCensus.ts), so that together they keep the configured budget.
 */
const buckets = new Map<string, TokenBucket>();
/** The configured budget of each role, and how many processes share it now. */
const configured = new Map<string, number>();
let sharedBy = 1;

/** Each role's budget becomes 1/`workers` of the configured one (refilled at the old rate up to now). */
export function shareTokenRateLimits(workers: number): void {
  sharedBy = Math.max(1, Math.floor(workers));
  const now = Date.now();
  for (const [role, tokensPerMinute] of configured) buckets.get(role)?.setRate(tokensPerMinute / sharedBy, now);
}

/** Sets this process's budgets from a worker's config; a role without `tokensPerMinute` has none. */
export function configureTokenRateLimits(limits: Record<string, { tokensPerMinute?: number | undefined }>): void {
  for (const [role, { tokensPerMinute }] of Object.entries(limits)) {
    if (tokensPerMinute === undefined) {
      buckets.delete(role);
      configured.delete(role);
    }
    // The same limit keeps its bucket, so a second worker set in one process does not refill it.
    else if (configured.get(role) !== tokensPerMinute) {
      configured.set(role, tokensPerMinute);
      buckets.set(role, new TokenBucket(tokensPerMinute / sharedBy, Date.now()));
    }
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
