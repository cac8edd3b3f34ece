import { callSeed } from '../../src/core/seeds.js';
import type { RecordedCall } from '../../test/support/fakeOpenAI.js';
import type { CallDraw } from './latencyModel.js';

/** What the fake LLM server saw of a run: calls, failures, repeats, and the delay between a dialogue's calls. */

export interface Percentiles {
  count: number;
  p50: number | null;
  p99: number | null;
  mean: number | null;
  max: number | null;
}

/** Nearest-rank percentiles, ms rounded to 0.1. */
export function percentiles(values: number[]): Percentiles {
  if (values.length === 0) return { count: 0, p50: null, p99: null, mean: null, max: null };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!);
  return {
    count: sorted.length,
    p50: at(0.5),
    p99: at(0.99),
    mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
    max: round(sorted[sorted.length - 1]!),
  };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

export interface CallFigures {
  /** Chat-completion requests the fake answered during the timed run, whatever their status. */
  llm_calls: number;
  /** Of those, answered 200. */
  successful_calls: number;
  /** Of those, answered 500 by the failure model (Attune retries them). */
  failed_calls_injected: number;
  /** Answered with another status (none expected). */
  other_status_calls: number;
  /**
   * Successful answers to a request (role, messages, seed) that had been answered successfully
   * before, counted by the fake over the whole run, warm-up included: sum over requests of
   * (successful answers - 1). A 500 and its retry are one success, not a repeat.
   */
  repeated_calls: number;
  /** Distinct requests answered successfully more than once. */
  repeated_requests: number;
  /** The latencies drawn (the model's check: p50 near the median, p99 near the p99). */
  latency_drawn_ms: Percentiles;
  /**
   * Within one dialogue, from a call's answer (its arrival + its drawn latency) to the next call's
   * arrival, after a successful answer: the orchestration between two LLM calls.
   */
  orchestration_delay_ms: Percentiles;
  /** The same after an answer of 500: the retry's backoff and scheduling. */
  retry_delay_ms: Percentiles;
  /** Requests that could not be told to one dialogue (two dialogues' per-call seeds collided); left out of the delays. */
  unattributed_calls: number;
}

/**
 * `runCalls`: the fake's records of the timed run; `draws`: the model's draws of the same calls (in
 * arrival order); `successCounts`: the fake's successful answers per request over its whole life;
 * `seeds`: each dialogue's rollout seed, by which its calls' seeds are known (see `callSeed`).
 */
export function callFigures(
  runCalls: RecordedCall[],
  draws: CallDraw[],
  successCounts: Map<string, number>,
  seeds: number[],
  turns: number,
): CallFigures {
  const status = (s: number) => runCalls.filter((c) => c.status === s).length;
  let repeatedCalls = 0;
  let repeatedRequests = 0;
  for (const count of successCounts.values()) {
    if (count > 1) {
      repeatedCalls += count - 1;
      repeatedRequests++;
    }
  }
  const owner = new Map<string, number | 'ambiguous'>();
  const own = (role: string, seed: number, dialogue: number) => {
    const key = `${role}:${seed}`;
    owner.set(key, owner.has(key) ? 'ambiguous' : dialogue);
  };
  seeds.forEach((seed, dialogue) => {
    own('opening', callSeed(seed, 0, 'opening'), dialogue);
    for (let turn = 1; turn <= turns; turn++)
      for (const role of ['policy', 'analysis', 'reply']) own(role, callSeed(seed, turn, role), dialogue);
  });
  const byDialogue: CallDraw[][] = seeds.map(() => []);
  let unattributed = 0;
  for (const draw of draws) {
    const found = draw.seed === null ? undefined : owner.get(`${draw.role}:${draw.seed}`);
    if (typeof found === 'number') byDialogue[found]!.push(draw);
    else unattributed++;
  }
  const afterSuccess: number[] = [];
  const afterFailure: number[] = [];
  for (const list of byDialogue) {
    list.sort((a, b) => a.arrivedAtMs - b.arrivedAtMs);
    for (let k = 1; k < list.length; k++) {
      const previous = list[k - 1]!;
      const gap = list[k]!.arrivedAtMs - (previous.arrivedAtMs + previous.latencyMs);
      (previous.failed ? afterFailure : afterSuccess).push(gap);
    }
  }
  return {
    llm_calls: runCalls.length,
    successful_calls: status(200),
    failed_calls_injected: status(500),
    other_status_calls: runCalls.filter((c) => c.status !== 200 && c.status !== 500).length,
    repeated_calls: repeatedCalls,
    repeated_requests: repeatedRequests,
    latency_drawn_ms: percentiles(draws.map((d) => d.latencyMs)),
    orchestration_delay_ms: percentiles(afterSuccess),
    retry_delay_ms: percentiles(afterFailure),
    unattributed_calls: unattributed,
  };
}
