import { randomIndex, seededRandom } from '../seededRandom.js';

export interface SignFlipOptions {
  /** Clusters up to this many are tested exactly (all 2^n sign patterns); more are sampled. */
  exactUpTo?: number;
  samples?: number;
  seed?: number;
}

export const DEFAULT_SIGN_FLIP_SAMPLES = 20_000;
const EXACT_UP_TO = 16;
// Sums that differ by rounding alone count as equal, so all-zero differences give p = 1.
const TIE_TOLERANCE = 1e-9;

/**
 * Two-sided p-value of a paired sign-flip (permutation) test of "no difference" on paired
 * differences grouped in clusters (one scenario's repeats). Under the null hypothesis, which of A
 * and B produced each scenario's dialogues is exchangeable, so the sign of a cluster's differences
 * can be flipped as a whole; the statistic is the pooled mean difference. Exact for few clusters,
 * otherwise a seeded Monte Carlo estimate that counts the observed pattern, so p is never 0.
 */
export function signFlipPValue(clusters: readonly (readonly number[])[], options: SignFlipOptions = {}): number {
  const sums = clusters.filter((c) => c.length > 0).map((c) => c.reduce((s, v) => s + v, 0));
  const n = sums.length;
  if (n === 0) return 1;
  const observed = Math.abs(sums.reduce((s, v) => s + v, 0));
  const atLeastAsExtreme = (signs: (i: number) => number) => {
    let total = 0;
    for (let i = 0; i < n; i++) total += signs(i) * sums[i]!;
    return Math.abs(total) >= observed - TIE_TOLERANCE * Math.max(1, observed);
  };
  if (n <= (options.exactUpTo ?? EXACT_UP_TO)) {
    let extreme = 0;
    const patterns = 2 ** n;
    for (let mask = 0; mask < patterns; mask++) if (atLeastAsExtreme((i) => ((mask >>> i) & 1 ? -1 : 1))) extreme++;
    return extreme / patterns;
  }
  const samples = options.samples ?? DEFAULT_SIGN_FLIP_SAMPLES;
  const random = seededRandom(options.seed ?? 1);
  let extreme = 0;
  for (let s = 0; s < samples; s++) if (atLeastAsExtreme(() => (randomIndex(random, 2) === 0 ? 1 : -1))) extreme++;
  return (extreme + 1) / (samples + 1);
}
