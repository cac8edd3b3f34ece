import { randomIndex, seededRandom } from '../seededRandom.js';

export interface Interval {
  low: number;
  high: number;
}

export interface BootstrapOptions {
  /** Central coverage, e.g. 0.95. */
  level?: number;
  resamples?: number;
  seed?: number;
}

export const DEFAULT_LEVEL = 0.95;
export const DEFAULT_RESAMPLES = 2000;
export const DEFAULT_BOOTSTRAP_SEED = 20_250_101;

/** The q-quantile of sorted values, interpolating linearly between order statistics. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * Math.min(1, Math.max(0, q));
  const below = Math.floor(position);
  const above = Math.ceil(position);
  const lower = sorted[below]!;
  return lower + (sorted[above]! - lower) * (position - below);
}

/** The mean over every value of every cluster (clusters weigh by their size). */
export function pooledMean(clusters: readonly (readonly number[])[]): number {
  let sum = 0;
  let count = 0;
  for (const cluster of clusters) {
    for (const value of cluster) sum += value;
    count += cluster.length;
  }
  return count === 0 ? Number.NaN : sum / count;
}

/**
 * Percentile bootstrap interval of the pooled mean, resampling whole clusters with replacement.
 * A cluster is one scenario's dialogues (its repeats): they share a persona and a policy's habits
 * with it, so they are not independent, and resampling them one by one would make the interval
 * too narrow. With one dialogue per scenario this is the ordinary bootstrap of the mean.
 */
export function clusterBootstrapInterval(
  clusters: readonly (readonly number[])[],
  options: BootstrapOptions = {},
): Interval {
  const filled = clusters.filter((c) => c.length > 0);
  if (filled.length === 0) return { low: Number.NaN, high: Number.NaN };
  const level = options.level ?? DEFAULT_LEVEL;
  const resamples = options.resamples ?? DEFAULT_RESAMPLES;
  const random = seededRandom(options.seed ?? DEFAULT_BOOTSTRAP_SEED);
  const sums = filled.map((c) => c.reduce((s, v) => s + v, 0));
  const sizes = filled.map((c) => c.length);
  const means: number[] = [];
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    let count = 0;
    for (let i = 0; i < filled.length; i++) {
      const pick = randomIndex(random, filled.length);
      sum += sums[pick]!;
      count += sizes[pick]!;
    }
    means.push(sum / count);
  }
  means.sort((x, y) => x - y);
  const tail = (1 - level) / 2;
  return { low: quantile(means, tail), high: quantile(means, 1 - tail) };
}
