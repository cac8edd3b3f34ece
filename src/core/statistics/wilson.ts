import type { Interval } from './bootstrap.js';

/** The normal quantile of a central 95 % interval. */
export const Z_95 = 1.959963984540054;

/**
 * Wilson score interval of a share `solved / count`: unlike the normal approximation it stays inside
 * [0, 1] and is not empty at 0 or at `count` solved, which is where small capability suites often are.
 * Null when there is nothing to estimate from.
 */
export function wilsonInterval(solved: number, count: number, z = Z_95): Interval | null {
  if (count <= 0 || solved < 0 || solved > count) return null;
  const p = solved / count;
  const z2 = z * z;
  const centre = (p + z2 / (2 * count)) / (1 + z2 / count);
  const half = (z / (1 + z2 / count)) * Math.sqrt((p * (1 - p)) / count + z2 / (4 * count * count));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}
