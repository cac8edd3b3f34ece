/** Mean, population standard deviation and range of a set of values. */
export interface ValueStats {
  mean: number;
  std: number;
  min: number;
  max: number;
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

/** Mean, population standard deviation and range; all 0 for no values. */
export function valueStats(values: readonly number[]): ValueStats {
  const m = mean(values);
  const std = Math.sqrt(mean(values.map((v) => (v - m) ** 2)));
  return { mean: m, std, min: values.length ? Math.min(...values) : 0, max: values.length ? Math.max(...values) : 0 };
}
