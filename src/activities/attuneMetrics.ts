import { Context } from '@temporalio/activity';
import type { MetricMeter } from '@temporalio/common';
import { METRIC_NAMES } from '../core/metricNames.js';

/**
 * Attune's own metrics, recorded through the activity context's meter: they come out of the SDK's
 * Prometheus endpoint (`metrics.prometheus`) beside its own, tagged with the task queue and
 * activity type. Without metrics configured the SDK's meter drops them; outside an activity
 * (a bench calling an activity function directly) nothing is recorded.
 */
function meter(): MetricMeter | null {
  try {
    return Context.current().metricMeter;
  } catch {
    return null;
  }
}

export interface LlmCallRecord {
  /** `policy` or `simulator`. */
  endpoint: string;
  /** `ok`, or the failure's type (`LlmTimeout`, `LlmRateLimited`, ...). */
  status: string;
  latencyMs?: number;
  promptTokens?: number;
  completionTokens?: number;
  rateLimitWaitMs?: number;
}

/** One finished LLM call, successful or not. */
export function recordLlmCall(call: LlmCallRecord): void {
  const m = meter();
  if (!m) return;
  const endpoint = { endpoint: call.endpoint };
  m.createCounter(METRIC_NAMES.llmCalls, undefined, 'LLM calls by endpoint and status').add(1, {
    ...endpoint,
    status: call.status,
  });
  // A call made by a retried activity attempt: the retries Temporal made because of LLM failures.
  if (Context.current().info.attempt > 1)
    m.createCounter(METRIC_NAMES.llmRetries, undefined, 'LLM calls made by a retried activity attempt').add(
      1,
      endpoint,
    );
  if (call.latencyMs !== undefined)
    m.createHistogram(METRIC_NAMES.llmLatency, 'int', 'ms', 'LLM call latency, rate-limit waits excluded').record(
      Math.max(0, Math.round(call.latencyMs)),
      endpoint,
    );
  if (call.promptTokens)
    m.createCounter(METRIC_NAMES.promptTokens, 'tokens', 'prompt tokens').add(call.promptTokens, endpoint);
  if (call.completionTokens)
    m.createCounter(METRIC_NAMES.completionTokens, 'tokens', 'completion tokens').add(call.completionTokens, endpoint);
  if (call.rateLimitWaitMs && call.rateLimitWaitMs > 0) {
    m.createCounter(METRIC_NAMES.rateLimitWaits, undefined, 'calls that waited for the tokens-per-minute budget').add(
      1,
      endpoint,
    );
    m.createCounter(METRIC_NAMES.rateLimitWaitMs, 'ms', 'time spent waiting for the tokens-per-minute budget').add(
      Math.round(call.rateLimitWaitMs),
      endpoint,
    );
  }
}

/** A rollout whose transcript was written, by outcome (a retried write counts again). */
export function recordRollout(outcome: string): void {
  meter()?.createCounter(METRIC_NAMES.rollouts, undefined, 'rollouts by outcome').add(1, { outcome });
}
