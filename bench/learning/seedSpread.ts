/** Figures over seeds: a mean with its two-sided 95 % confidence interval (Student's t). */

/** t quantile (0.975) for 1..10 degrees of freedom; more seeds than that use 2.0 (close enough to report). */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228];

export interface MeanCi {
  n: number;
  mean: number;
  /** Half-width of the 95 % interval; null with fewer than two values. */
  ci95: number | null;
}

export function meanCi(values: readonly number[]): MeanCi {
  const n = values.length;
  const mean = values.reduce((a, v) => a + v, 0) / Math.max(1, n);
  if (n < 2) return { n, mean, ci95: null };
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1);
  return { n, mean, ci95: (T975[n - 2] ?? 2.0) * Math.sqrt(variance / n) };
}

export function formatMeanCi(m: MeanCi, digits: number): string {
  return m.ci95 === null ? m.mean.toFixed(digits) : `${m.mean.toFixed(digits)} ± ${m.ci95.toFixed(digits)}`;
}
