/** Steady-state throughput of a run from its step records' times, and the figures derived from it. */

export interface Throughput {
  stepsPerHour: number;
  secondsPerStep: number;
  /** Seconds between consecutive step records, in step order. */
  stepIntervalsS: number[];
}

/**
 * (n - 1) steps over (last - first): the time before the first record (for a pipeline: filling it)
 * is not counted. Needs at least two records.
 */
export function steadyThroughput(records: { step: number; time: string }[]): Throughput {
  const times = [...records].sort((a, b) => a.step - b.step).map((r) => Date.parse(r.time));
  if (times.length < 2 || times.some((t) => Number.isNaN(t)))
    throw new Error(`need at least two step records with valid times, got ${records.length}`);
  const intervals = times.slice(1).map((t, i) => (t - (times[i] as number)) / 1000);
  const secondsPerStep = ((times[times.length - 1] as number) - (times[0] as number)) / 1000 / (times.length - 1);
  return { stepsPerHour: 3600 / secondsPerStep, secondsPerStep, stepIntervalsS: intervals };
}

/** The most overlapping rollouts (R) with optimizer steps (T) can gain: (R + T) / max(R, T). */
export function limitSpeedup(rolloutSeconds: number, optimizerSeconds: number): number {
  return (rolloutSeconds + optimizerSeconds) / Math.max(rolloutSeconds, optimizerSeconds);
}

/**
 * What no overlap can beat, whatever the gathering: every step needs the trainer for its own step
 * time, so a run gains at most the synchronous run's step (rollouts, the optimizer step, the publish
 * and the orchestration, measured) over the trainer's. At T = R that is 2 + (publish + orchestration) / T.
 */
export function trainerBoundSpeedup(synchronousSecondsPerStep: number, trainerSeconds: number): number {
  return synchronousSecondsPerStep / trainerSeconds;
}
