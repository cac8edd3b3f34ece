import { createHash } from 'node:crypto';
import type { CallContext, CallRole, FakeOpenAIServer, FakeRequest } from '../../test/support/fakeOpenAI.js';

/**
 * The fake LLM's answers under load: a long-tailed latency per call (lognormal, set by its median
 * and p99) and a share of calls answered HTTP 500. Both are drawn from a hash of the bench's seed,
 * the request (role, messages, per-call seed: what identifies it) and how many times that request
 * arrived before, so a run's draws do not depend on the order in which concurrent requests happen
 * to arrive, and a retried request draws afresh (a failed call is not failed again forever).
 */

export interface LatencyModelParams {
  medianMs: number;
  p99Ms: number;
  failureRate: number;
  seed: number;
}

/** The z-score of the 99th percentile of a standard normal. */
export const Z_P99 = 2.326;

/** A lognormal's parameters: ln(latency) ~ N(mu, sigma²), so median = e^mu, p99 = e^(mu + 2.326 sigma). */
export function lognormal(medianMs: number, p99Ms: number): { mu: number; sigma: number } {
  return { mu: Math.log(medianMs), sigma: Math.log(p99Ms / medianMs) / Z_P99 };
}

/** Latencies are clipped here (5 x p99: about 2 in a million draws at the default sigma), so a run's HTTP timeout can be set. */
export function latencyCapMs(p: LatencyModelParams): number {
  return 5 * p.p99Ms;
}

/**
 * The standard normal's quantile function (Acklam's rational approximation, relative error below
 * 1.2e-9 over (0, 1)).
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new Error(`normalQuantile: p must lie in (0, 1), got ${p}`);
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239,
  ];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155211939];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const low = 0.02425;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (
      (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) /
      ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1)
    );
  }
  if (p > 1 - low) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
    (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1)
  );
}

/** Two independent uniforms in (0, 1) from a hash of `text`. */
function uniforms(text: string): [number, number] {
  const digest = createHash('sha256').update(text).digest();
  const u = (offset: number) => (digest.readUIntBE(offset, 6) + 0.5) / 2 ** 48;
  return [u(0), u(6)];
}

/** What the model decided for one arriving request. */
export interface CallDraw {
  role: CallRole;
  /** The request's per-call seed (Attune derives one per dialogue, turn and role). */
  seed: number | null;
  /** 0 for the request's first arrival, 1 for its first retry, ... */
  attempt: number;
  latencyMs: number;
  failed: boolean;
  /** Arrival at the fake (epoch ms, sub-millisecond); the answer leaves about `latencyMs` later. */
  arrivedAtMs: number;
}

/** The draws of one request: a pure function of the seed, the request and its attempt. */
export function drawFor(
  p: LatencyModelParams,
  requestKey: string,
  attempt: number,
): { latencyMs: number; failed: boolean } {
  const [uFail, uLatency] = uniforms(`${p.seed}:${requestKey}:${attempt}`);
  const { mu, sigma } = lognormal(p.medianMs, p.p99Ms);
  const latencyMs = Math.min(latencyCapMs(p), Math.exp(mu + sigma * normalQuantile(uLatency)));
  return { latencyMs: Math.round(latencyMs), failed: uFail < p.failureRate };
}

function requestKey(role: CallRole, body: FakeRequest): string {
  return createHash('sha256')
    .update(JSON.stringify([role, body.messages, body.seed ?? null]))
    .digest('hex');
}

/**
 * Puts the model on a fake server through its per-call hooks (`latencyFor`, and `fault` for the
 * 500s). While `active` is false (a warm-up) calls are answered at once and never fail. Every draw
 * of an active call is kept in `draws`, in arrival order.
 */
export class LoadModel {
  readonly draws: CallDraw[] = [];
  /** Active calls drawn to succeed so far. */
  successes = 0;
  active = false;
  private readonly attempts = new Map<string, number>();
  /** One decision per arriving request: both hooks see the same request body object. */
  private readonly decided = new WeakMap<FakeRequest, CallDraw | null>();

  constructor(readonly params: LatencyModelParams) {}

  install(fake: FakeOpenAIServer): void {
    fake.behaviour.latencyFor = (ctx) => this.decide(ctx)?.latencyMs ?? 0;
    fake.behaviour.fault = (ctx) => (this.decide(ctx)?.failed ? '500' : undefined);
  }

  private decide(ctx: CallContext): CallDraw | null {
    if (this.decided.has(ctx.body)) return this.decided.get(ctx.body)!;
    let draw: CallDraw | null = null;
    if (this.active) {
      const key = requestKey(ctx.role, ctx.body);
      const attempt = this.attempts.get(key) ?? 0;
      this.attempts.set(key, attempt + 1);
      draw = {
        role: ctx.role,
        seed: ctx.body.seed ?? null,
        attempt,
        ...drawFor(this.params, key, attempt),
        arrivedAtMs: performance.timeOrigin + performance.now(),
      };
      this.draws.push(draw);
      if (!draw.failed) this.successes++;
    }
    this.decided.set(ctx.body, draw);
    return draw;
  }
}
