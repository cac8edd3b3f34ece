import { stableHash } from './seeds.js';

/** Most simulator seeds per scenario one evaluation runs: each is a child workflow in its history. */
export const MAX_EVALUATION_REPEATS = 20;

const SEED_MODULUS = 2_147_483_647;

/**
 * The seed of one dialogue of an evaluation. Repeat 0 keeps the seed evaluations have always used,
 * so an evaluation without repeats makes the same requests as before repeats existed.
 */
export function evaluationDialogueSeed(seed: number, scenarioId: string, repeat: number): number {
  if (repeat === 0) return (seed + stableHash(scenarioId)) % SEED_MODULUS;
  return (seed + stableHash(`${scenarioId}#repeat=${repeat}`)) % SEED_MODULUS;
}

/**
 * The rollout (child workflow) id of one dialogue. Repeat 0 keeps `<eval>--<scenario>`; later ones
 * add `--repeat=N` (1-based), and "=" never occurs in a scenario id, so no two ids meet, not even
 * on a file system that ignores case.
 */
export function evaluationDialogueId(evalId: string, scenarioId: string, repeat: number): string {
  const base = `${evalId}--${scenarioId}`;
  return repeat === 0 ? base : `${base}--repeat=${repeat + 1}`;
}

/**
 * The rollout id of a dialogue scored by a held-out simulator: the training simulator's id plus
 * `--simulator=NAME`, so each simulator's dialogues are children of their own, named after it.
 */
export function heldOutDialogueId(dialogueId: string, simulator: string): string {
  return `${dialogueId}--simulator=${simulator}`;
}

export interface PlannedDialogue<S> {
  scenario: S;
  repeat: number;
  seed: number;
  rolloutId: string;
}

/** Every dialogue of an evaluation, scenario by scenario, each scenario's repeats together. */
export function planEvaluationDialogues<S extends { id: string }>(
  evalId: string,
  scenarios: readonly S[],
  seed: number,
  repeats: number,
): PlannedDialogue<S>[] {
  return scenarios.flatMap((scenario) =>
    Array.from({ length: repeats }, (_, repeat) => ({
      scenario,
      repeat,
      seed: evaluationDialogueSeed(seed, scenario.id, repeat),
      rolloutId: evaluationDialogueId(evalId, scenario.id, repeat),
    })),
  );
}
