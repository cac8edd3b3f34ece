/**
 * A tokens-per-minute budget, as API providers set one next to their requests-per-second limit.
 * A call reserves its estimated tokens before it starts and is told how long to wait: the bucket
 * may go into debt, so calls queue in the order they asked and none starves. When the response
 * reports its real usage, the difference is settled. It starts empty: a worker that starts, or
 * restarts after a crash, cannot know what the endpoint's minute has left, so it earns its budget
 * at the rate rather than spending a full minute's worth at once. Pure: the caller passes the time.
 */
export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private rate: number,
    now: number,
  ) {
    this.tokens = 0;
    this.updatedAt = now;
  }

  get tokensPerMinute(): number {
    return this.rate;
  }

  /** A new rate from `now` on (a worker's share of a budget that more or fewer workers split): earned at the old rate until then. */
  setRate(tokensPerMinute: number, now: number): void {
    this.refill(now);
    this.rate = tokensPerMinute;
    this.tokens = Math.min(this.tokens, tokensPerMinute);
  }

  private refill(now: number): void {
    if (now > this.updatedAt) {
      this.tokens = Math.min(this.rate, this.tokens + ((now - this.updatedAt) * this.rate) / 60_000);
      this.updatedAt = now;
    }
  }

  /** Takes `cost` tokens; returns the milliseconds to wait before the call may start (0 when the budget has them). */
  reserve(cost: number, now: number): number {
    this.refill(now);
    this.tokens -= cost;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 60_000) / this.rate);
  }

  /** The call used `actual` tokens where `estimated` were reserved: gives back or takes the difference. */
  settle(estimated: number, actual: number, now: number): void {
    this.refill(now);
    this.tokens = Math.min(this.rate, this.tokens + estimated - actual);
  }

  available(now: number): number {
    this.refill(now);
    return this.tokens;
  }
}

/** What a chat request is charged before its response says: prompt characters / 4 plus the completion bound. */
export function estimateRequestTokens(messages: readonly { content: string }[], maxTokens: number): number {
  const chars = messages.reduce((n, m) => n + m.content.length, 0);
  return Math.ceil(chars / 4) + maxTokens;
}
