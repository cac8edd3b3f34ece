/**
 * How hard the simulated user is to reach (RLVER's simulator levels): `simple` takes almost any kind
 * reply as support, `normal` (SAGE's user, Attune's behaviour before levels existed) weighs comfort
 * and advice and accepts what is reasonable, `hard` accepts only support that fits its needs closely.
 * Zod-free, for the workflow bundle; the schema is in difficultySchema.ts.
 */
export const SIMULATOR_DIFFICULTIES = ['simple', 'normal', 'hard'] as const;
export type SimulatorDifficulty = (typeof SIMULATOR_DIFFICULTIES)[number];

export const DEFAULT_DIFFICULTY: SimulatorDifficulty = 'normal';

/**
 * The level a dialogue's simulated user plays: the scenario's own, else the settings'. Absent means
 * `normal` everywhere, so records written before levels existed read as what they were.
 */
export function dialogueDifficulty(
  simulator: { difficulty?: SimulatorDifficulty | undefined },
  scenario: { difficulty?: SimulatorDifficulty | undefined },
): SimulatorDifficulty {
  return scenario.difficulty ?? simulator.difficulty ?? DEFAULT_DIFFICULTY;
}

/**
 * A simulator call at `difficulty`, in the form records keep: `normal` is written as no field, so the
 * inputs, manifests and step records of the default level stay exactly those of earlier versions.
 */
export function withDifficulty<T extends { difficulty?: SimulatorDifficulty | undefined }>(
  simulator: T,
  difficulty: SimulatorDifficulty,
): T {
  const { difficulty: _dropped, ...rest } = simulator;
  return (difficulty === DEFAULT_DIFFICULTY ? rest : { ...rest, difficulty }) as T;
}

/** The level a record names (absent: normal), or its mix of levels, in words: `hard`, `mix: simple 20 % · hard 80 %`. */
export function difficultyText(simulator: {
  difficulty?: SimulatorDifficulty | undefined;
  difficultyMix?: Partial<Record<SimulatorDifficulty, number>> | undefined;
}): string {
  const mix = simulator.difficultyMix;
  if (mix === undefined) return simulator.difficulty ?? DEFAULT_DIFFICULTY;
  const parts = SIMULATOR_DIFFICULTIES.filter((level) => (mix[level] ?? 0) > 0).map(
    (level) => `${level} ${Math.round((mix[level] ?? 0) * 1000) / 10} %`,
  );
  return `mix: ${parts.join(' · ')}`;
}
