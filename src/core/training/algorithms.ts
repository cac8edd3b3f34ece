/**
 * The training algorithms and what each one implies for the orchestrator. Adding an algorithm: a
 * policy loss in the trainer (its RunCreate then accepts the name), an entry here, and a run of
 * `npm run generate:settings`. No zod here: workflows import it.
 */

export const ALGORITHMS = ['grpo', 'ppo'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

/** What a run may need for a setting to mean anything (the trainer's `x-needs` marks). */
export type Requirement = 'critic';

export interface AlgorithmTraits {
  /** Samples per scenario when the config gives none. */
  defaultSamplesPerScenario: number;
  /** Whether the trainer trains a value model beside the policy. */
  hasCritic: boolean;
  /** Survivors a scenario's group needs to be trained on, given the samples per scenario. */
  minGroupSize(samplesPerScenario: number): number;
}

export const ALGORITHM_TRAITS: Record<Algorithm, AlgorithmTraits> = {
  // GRPO compares a dialogue with the others of its group, so a group needs two survivors.
  grpo: {
    defaultSamplesPerScenario: 4,
    hasCritic: false,
    minGroupSize: (samplesPerScenario) => (samplesPerScenario > 1 ? 2 : 1),
  },
  // PPO's critic gives each dialogue its baseline: every finished dialogue is trained on.
  ppo: { defaultSamplesPerScenario: 1, hasCritic: true, minGroupSize: () => 1 },
};

/** The requirements the algorithm meets. */
export function meets(algorithm: Algorithm, requirement: Requirement): boolean {
  switch (requirement) {
    case 'critic':
      return ALGORITHM_TRAITS[algorithm].hasCritic;
  }
}
