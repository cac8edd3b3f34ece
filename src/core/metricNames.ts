/** Attune's own metrics' names and buckets: the activities record them, the Temporal runtime declares their buckets. */

/** Latency buckets (ms) for LLM calls: a local 135M model answers in tens of ms, a busy API in a minute. */
export const LLM_LATENCY_BUCKETS_MS = [25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 120_000];

export const METRIC_NAMES = {
  llmCalls: 'attune_llm_calls',
  llmLatency: 'attune_llm_latency_ms',
  promptTokens: 'attune_llm_prompt_tokens',
  completionTokens: 'attune_llm_completion_tokens',
  llmRetries: 'attune_llm_retries',
  rateLimitWaits: 'attune_llm_rate_limit_waits',
  rateLimitWaitMs: 'attune_llm_rate_limit_wait_ms',
  rollouts: 'attune_rollouts',
} as const;
