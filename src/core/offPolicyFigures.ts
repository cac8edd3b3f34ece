import type { TrainerStepMetrics } from './runMetrics.js';

/**
 * A step's off-policy figures as the report and `attune runs show` present them: null where the
 * trainer did not report a figure (older trainers) or reported null (no sampler log-probs).
 */
export interface OffPolicyFigures {
  /** Samples per staleness (steps between the sampled version and the weights trained), keys ascending. */
  stalenessHistogram: Record<string, number> | null;
  isWeightMean: number | null;
  isWeightMax: number | null;
  isTruncatedShare: number | null;
}

const figure = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** Records are read back from the metrics log without a schema, so anything odd counts as not reported. */
function histogram(value: unknown): Record<string, number> | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return null;
  const counts: [string, number][] = [];
  for (const [key, count] of entries) {
    if (!/^\d+$/.test(key) || figure(count) === null) return null;
    counts.push([key, count as number]);
  }
  return Object.fromEntries(counts.sort((a, b) => Number(a[0]) - Number(b[0])));
}

export function offPolicyFigures(trainer: Partial<TrainerStepMetrics> | undefined): OffPolicyFigures {
  return {
    stalenessHistogram: histogram(trainer?.staleness_histogram),
    isWeightMean: figure(trainer?.is_weight_mean),
    isWeightMax: figure(trainer?.is_weight_max),
    isTruncatedShare: figure(trainer?.is_truncated_share),
  };
}

/** "1: 8" for one staleness; "0:6 1:2" for several, so a table cell stays narrow; null without a histogram. */
export function stalenessText(histogram: Record<string, number> | null): string | null {
  if (histogram === null) return null;
  const entries = Object.entries(histogram);
  if (entries.length === 1) return entries.map(([k, n]) => `${k}: ${n}`).join('');
  return entries.map(([k, n]) => `${k}:${n}`).join(' ');
}

/** The mean staleness over the step's samples (for sorting a table by it); null without a histogram. */
export function meanStaleness(histogram: Record<string, number> | null): number | null {
  if (histogram === null) return null;
  let samples = 0;
  let sum = 0;
  for (const [k, n] of Object.entries(histogram)) {
    samples += n;
    sum += Number(k) * n;
  }
  return samples > 0 ? sum / samples : null;
}
