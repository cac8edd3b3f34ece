import type { HistorySize } from './histories.js';
import type { Sample } from './sampler.js';
import type { ProcessRole } from './stack.js';

/** The figures of one window of steps: what the results file holds per 50 steps. */
export interface WindowFigures {
  fromStep: number;
  toStep: number;
  samples: number;
  /** Largest bytes seen under the trainer's state directory, and under the publishers' download dirs. */
  maxTrainerStateBytes: number;
  maxDownloadBytes: number;
  /** Their medians over the window's samples: between commits, when nothing is being written. */
  medianTrainerStateBytes: number;
  medianDownloadBytes: number;
  /** Per process role: the median and the largest RSS sampled in the window, MiB. */
  rssMiB: Partial<Record<ProcessRole, { median: number; max: number }>>;
  /** The largest workflow history of the window's steps: training executions and rollouts. */
  maxHistory: { training: { events: number; bytes: number }; rollout: { events: number; bytes: number } };
}

export const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? 0 : sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Steps 1..steps cut into windows of `size` (the last one may be shorter). */
export function windowsOf(steps: number, size: number): { fromStep: number; toStep: number }[] {
  const out: { fromStep: number; toStep: number }[] = [];
  for (let from = 1; from <= steps; from += size)
    out.push({ fromStep: from, toStep: Math.min(from + size - 1, steps) });
  return out;
}

export function windowFigures(
  window: { fromStep: number; toStep: number },
  samples: Sample[],
  histories: HistorySize[],
): WindowFigures {
  const inside = (step: number) => step >= window.fromStep && step <= window.toStep;
  const mine = samples.filter((s) => inside(s.step));
  const roles = [...new Set(mine.flatMap((s) => Object.keys(s.rssMiB) as ProcessRole[]))];
  const rssMiB: WindowFigures['rssMiB'] = {};
  for (const role of roles) {
    const values = mine.flatMap((s) => (s.rssMiB[role] !== undefined ? [s.rssMiB[role]] : []));
    rssMiB[role] = { median: Math.round(median(values) * 10) / 10, max: Math.max(...values) };
  }
  const largest = (kind: HistorySize['kind']) => {
    const of = histories.filter((h) => h.kind === kind && inside(h.step));
    return { events: Math.max(0, ...of.map((h) => h.events)), bytes: Math.max(0, ...of.map((h) => h.bytes)) };
  };
  return {
    ...window,
    samples: mine.length,
    maxTrainerStateBytes: Math.max(0, ...mine.map((s) => s.trainerStateBytes)),
    maxDownloadBytes: Math.max(0, ...mine.map((s) => s.downloadBytes)),
    medianTrainerStateBytes: median(mine.map((s) => s.trainerStateBytes)),
    medianDownloadBytes: median(mine.map((s) => s.downloadBytes)),
    rssMiB,
    maxHistory: { training: largest('training'), rollout: largest('rollout') },
  };
}
