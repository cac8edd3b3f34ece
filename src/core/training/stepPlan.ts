import { withDifficulty, type SimulatorDifficulty } from '../difficulty.js';
import type { RolloutSettings } from '../rolloutSettingsSchema.js';
import { stableHash } from '../seeds.js';
import { stepDifficulties, type DifficultyPhase } from './difficultyMix.js';
import { scenariosForStep } from './scenarioSchedule.js';

/** One dialogue a training step runs: its ids and seed follow from (run, seed, step) alone. */
export interface PlannedRollout {
  rolloutId: string;
  scenarioId: string;
  /** The GRPO group: the scenario at its position within the step. */
  group: string;
  seed: number;
  /** The simulated user's level, from the run's `difficultyMix`; absent without one (the settings' level). */
  difficulty?: SimulatorDifficulty;
}

/** What planning a step needs from the run's settings. */
export interface StepPlanSettings {
  runName: string;
  seed: number;
  scenariosPerStep: number;
  samplesPerScenario: number;
  difficultyMix?: readonly DifficultyPhase[] | undefined;
}

/** The scenarios a step samples, in order: they follow from (seed, step) and the split alone. */
export function stepScenarioIds(settings: StepPlanSettings, step: number, scenarioIds: readonly string[]): string[] {
  return scenariosForStep(scenarioIds, settings.seed, step, settings.scenariosPerStep).ids;
}

/**
 * The step's dialogues: `samplesPerScenario` per scenario chosen for the step. A retried or
 * resumed step plans the same ids and seeds, so its child workflow ids are the same too.
 */
export function planStepRollouts(
  settings: StepPlanSettings,
  step: number,
  scenarioIds: readonly string[],
): PlannedRollout[] {
  return plannedRolloutsOf(settings, step, stepScenarioIds(settings, step, scenarioIds));
}

/** The dialogues of the scenarios chosen for a step (see `stepScenarioIds`). */
export function plannedRolloutsOf(
  settings: StepPlanSettings,
  step: number,
  chosen: readonly string[],
): PlannedRollout[] {
  const planned: PlannedRollout[] = [];
  const levels = settings.difficultyMix
    ? stepDifficulties(settings.difficultyMix, settings.seed, step, settings.scenariosPerStep, chosen.length)
    : null;
  chosen.forEach((scenarioId, position) => {
    const difficulty = levels?.[position];
    // The same scenario can appear twice in a step that spans an epoch boundary: position keeps groups apart.
    const group = `s${step}-${position}-${scenarioId}`;
    for (let k = 0; k < settings.samplesPerScenario; k++) {
      planned.push({
        rolloutId: `${settings.runName}--s${step}--${position}-${scenarioId}--k${k}`,
        scenarioId,
        group,
        seed: stableHash(`${settings.seed}:${step}:${position}:${k}`) % 2_147_483_647,
        ...(difficulty !== undefined ? { difficulty } : {}),
      });
    }
  });
  return planned;
}

/**
 * The id and seed of one attempt at a planned dialogue. Attempt 0 is the first run; a retry after
 * the operator resumes gets a new workflow id (the failed child's id is taken) and a new seed.
 */
export function rolloutAttempt(planned: PlannedRollout, attempt: number): { rolloutId: string; seed: number } {
  return {
    rolloutId: attempt === 0 ? planned.rolloutId : `${planned.rolloutId}--a${attempt}`,
    seed: planned.seed + attempt,
  };
}

/** A planned dialogue's rollout settings: the step's, with its simulator at the dialogue's own level, if it has one. */
export function plannedRolloutSettings(step: RolloutSettings, planned: PlannedRollout): RolloutSettings {
  return planned.difficulty === undefined
    ? step
    : { ...step, simulator: withDifficulty(step.simulator, planned.difficulty) };
}

/**
 * The step's rollout settings: sampling from `version`, at the operator's temperature if one was
 * set. A full-weight run on vLLM (its policy names a `weightVersion`) keeps the served model's name
 * and expects `version` as vLLM's weight version; otherwise `version` is the model name.
 */
export function stepRolloutSettings(
  rollout: RolloutSettings,
  version: string,
  temperature: number | undefined,
): RolloutSettings {
  const sampling = rollout.policy.weightVersion !== undefined ? { weightVersion: version } : { model: version };
  return {
    ...rollout,
    policy: { ...rollout.policy, ...sampling, ...(temperature !== undefined ? { temperature } : {}) },
  };
}

/**
 * The run's evaluation settings sampling `version` from the server the run publishes to: a
 * full-weight run's served model keeps its name, and the version is vLLM's weight version.
 */
export function evaluationSettingsAt(
  evalSettings: RolloutSettings,
  policyBaseURL: string,
  version: string,
): RolloutSettings {
  return {
    ...evalSettings,
    policy: {
      ...evalSettings.policy,
      baseURL: policyBaseURL,
      ...(evalSettings.policy.weightVersion !== undefined ? { weightVersion: version } : { model: version }),
    },
  };
}

/** Every `evalEvery` steps and after the last one; `evalEvery` 0 turns evaluations off. */
export function evaluatesAfterStep(step: number, evalEvery: number, steps: number): boolean {
  return evalEvery > 0 && (step % evalEvery === 0 || step === steps);
}

/** The workflow id of the evaluation after a step. */
export function stepEvaluationId(runName: string, step: number): string {
  return `${runName}-eval-s${step}`;
}
