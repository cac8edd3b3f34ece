import { clusterBootstrapInterval, DEFAULT_LEVEL, pooledMean, type Interval } from './bootstrap.js';
import { signFlipPValue } from './signFlipTest.js';

export interface Pair {
  /** Pairs of one cluster (a scenario) are resampled and sign-flipped together. */
  cluster: string;
  a: number;
  b: number;
}

export interface PairedDifference {
  /** Mean of B - A over the pairs. */
  difference: number;
  /** Percentile cluster-bootstrap interval of the difference. */
  ci: Interval;
  /** Two-sided p-value of the sign-flip test (exact up to 16 clusters). */
  pValue: number;
  significant: boolean;
  pairs: number;
  clusters: number;
  level: number;
}

/** The paired difference B - A with its interval and test; NaN difference and p = 1 when nothing pairs. */
export function pairedDifference(pairs: readonly Pair[], level = DEFAULT_LEVEL): PairedDifference {
  const byCluster = new Map<string, number[]>();
  for (const pair of pairs) byCluster.set(pair.cluster, [...(byCluster.get(pair.cluster) ?? []), pair.b - pair.a]);
  const clusters = [...byCluster.entries()].sort(([x], [y]) => x.localeCompare(y)).map(([, diffs]) => diffs);
  const pValue = signFlipPValue(clusters);
  return {
    difference: pooledMean(clusters),
    ci: clusterBootstrapInterval(clusters, { level }),
    pValue,
    significant: pairs.length > 0 && pValue < 1 - level,
    pairs: pairs.length,
    clusters: clusters.length,
    level,
  };
}
