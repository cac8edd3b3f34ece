/**
 * Learning parity over seeds: a setting that overlaps rollouts with training (staleness,
 * first-finished steps) learns as the synchronous run does when its last-three-steps reward, averaged
 * over the seeds, lies within the synchronous run's spread between those seeds (min to max).
 */

export interface SeedRun {
  seed: number;
  last3: number;
}

export interface Parity {
  /** The synchronous run's last-three-steps reward over the seeds: lowest and highest. */
  spread: { min: number; max: number };
  /** The setting's mean over the same seeds. */
  mean: number;
  withinSpread: boolean;
  /** Seeds whose own last-three-steps reward lies within the spread. */
  seedsWithin: number;
  seeds: number;
}

/** `setting` against `synchronous`, seed by seed; both must cover the same seeds. */
export function parityOver(synchronous: readonly SeedRun[], setting: readonly SeedRun[]): Parity {
  const seedsOf = (runs: readonly SeedRun[]) => runs.map((r) => r.seed).sort((a, b) => a - b);
  if (synchronous.length === 0 || seedsOf(synchronous).join() !== seedsOf(setting).join())
    throw new Error(
      `parity needs the same seeds for both runs: [${seedsOf(synchronous).join(', ')}] against [${seedsOf(setting).join(', ')}]`,
    );
  const base = synchronous.map((r) => r.last3);
  const spread = { min: Math.min(...base), max: Math.max(...base) };
  const within = (v: number) => v >= spread.min && v <= spread.max;
  const mean = setting.reduce((a, r) => a + r.last3, 0) / setting.length;
  return {
    spread,
    mean,
    withinSpread: within(mean),
    seedsWithin: setting.filter((r) => within(r.last3)).length,
    seeds: setting.length,
  };
}

/** One run's setting as the tables name it: its credit, then its staleness and first-finished steps where set. */
export function settingName(run: { credit: string; staleness?: number; stepDialogues?: string }): string {
  const parts = [run.credit];
  if (run.staleness !== undefined) parts.push(`S=${run.staleness}`);
  if (run.stepDialogues === 'firstFinished') parts.push('ff');
  return parts.join(' ');
}

/** The synchronous run a setting is judged against: the same credit, staleness 0, planned steps. */
export const isSynchronous = (run: { staleness?: number; stepDialogues?: string }): boolean =>
  (run.staleness ?? 0) === 0 && run.stepDialogues !== 'firstFinished';
