/** A policy call as seen in front of the server: when it arrived and when its answer came back (epoch ms). */
export interface BusySpan {
  arrivedAtMs: number;
  answeredAtMs: number;
}

/**
 * The share of [fromMs, toMs] in which the policy server had no call in flight: the window less the
 * union of the calls' spans clipped to it. 1 for a window no call touched, 0 for an empty window.
 */
export function idleShare(spans: readonly BusySpan[], fromMs: number, toMs: number): number {
  const length = toMs - fromMs;
  if (length <= 0) return 0;
  const clipped = spans
    .map((s) => [Math.max(fromMs, s.arrivedAtMs), Math.min(toMs, s.answeredAtMs)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let busy = 0;
  let end = fromMs;
  for (const [a, b] of clipped) {
    if (b <= end) continue;
    busy += b - Math.max(a, end);
    end = b;
  }
  return (length - busy) / length;
}
