import { SIMULATOR_DIFFICULTIES, type SimulatorDifficulty } from '../difficulty.js';
import { stableHash } from '../seeds.js';

/**
 * Mixing simulator levels over a training run (`training.difficultyMix`). Zod-free, for the workflow
 * bundle; the config's schema is in difficultyMixSchema.ts.
 */

/** Each level's share of a step's scenario groups; the shares sum to 1. */
export type DifficultyShares = Partial<Record<SimulatorDifficulty, number>>;

/**
 * From step `fromStep` on (until the next phase), the step's scenario groups get the levels in these
 * shares. A run's phases: the first from step 1, each later one from a later step. One phase is a
 * constant mix; phases of one level each are a curriculum.
 */
export interface DifficultyPhase extends DifficultyShares {
  fromStep: number;
}

/** The shares in force at `step` (1-based): the last phase that has begun; only levels with a share above 0. */
export function sharesAt(mix: readonly DifficultyPhase[], step: number): DifficultyShares {
  let phase = mix[0];
  for (const p of mix) if (p.fromStep <= step) phase = p;
  const shares: DifficultyShares = {};
  for (const level of SIMULATOR_DIFFICULTIES) {
    const value = phase?.[level] ?? 0;
    if (value > 0) shares[level] = value;
  }
  return shares;
}

/** The level of shares that give everything to one level; null for a real mix. */
export function singleLevel(shares: DifficultyShares): SimulatorDifficulty | null {
  const levels = SIMULATOR_DIFFICULTIES.filter((level) => (shares[level] ?? 0) > 0);
  return levels.length === 1 ? levels[0]! : null;
}

/** The golden ratio's fraction: consecutive multiples of it fill [0, 1) more evenly than any other step. */
const GOLDEN = (Math.sqrt(5) - 1) / 2;

/**
 * The level of the run's `index`-th scenario group (0-based, counted over all steps: step s's groups
 * are (s - 1) x groupsPerStep onwards), from (seed, index) alone, so a retried or resumed step gets
 * the same levels. The groups walk [0, 1) in golden-ratio strides from a seeded start, and a group
 * takes the level whose slice of [0, 1) (sized by its share) it lands in. A step's count of each
 * level stays within 2 of its share and the run's within a few, where drawing each group at random
 * drifts by the square root of the count, and rounding each step's shares favours the same levels in
 * every step (8 groups at 20 % get 2 each step: 25 %).
 */
export function groupDifficulty(shares: DifficultyShares, seed: number, index: number): SimulatorDifficulty {
  const start = stableHash(`${seed}:difficulty`) / 4_294_967_296;
  const u = (start + index * GOLDEN) % 1;
  const levels = SIMULATOR_DIFFICULTIES.filter((level) => (shares[level] ?? 0) > 0);
  let upper = 0;
  for (const level of levels) {
    upper += shares[level]!;
    if (u < upper) return level;
  }
  // Shares that sum to a hair under 1 leave the top of [0, 1) to the last level.
  return levels[levels.length - 1] ?? 'normal';
}

/** A step's levels, one per scenario group in the step's order (a GRPO group's samples share their scenario's level). */
export function stepDifficulties(
  mix: readonly DifficultyPhase[],
  seed: number,
  step: number,
  groupsPerStep: number,
  groups: number = groupsPerStep,
): SimulatorDifficulty[] {
  const shares = sharesAt(mix, step);
  const first = (step - 1) * groupsPerStep;
  return Array.from({ length: groups }, (_, position) => groupDifficulty(shares, seed, first + position));
}
