import type { RolloutSettings, SimulatorCall } from './rolloutSettingsSchema.js';
import type { GoalType, Personality } from './scenario.js';

export interface EvaluationScenario {
  id: string;
  goalType: GoalType;
  personality: Personality;
}

/** A simulator that scores the evaluation's dialogues again, besides the training simulator (`settings.simulator`). */
export interface HeldOutSimulator {
  /** Short name: in the report and in its dialogues' ids. */
  name: string;
  simulator: SimulatorCall;
}

export interface EvaluationInput {
  evalId: string;
  /** Directory the workers load scenarios from, and the scenarios to run (ids plus what the report groups by). */
  scenarioDir: string;
  scenarios: EvaluationScenario[];
  /** Label for the report (a directory or split name). */
  source: string;
  settings: RolloutSettings;
  seed: number;
  /** Dialogues per scenario, each with its own simulator seed; absent (older inputs) = 1. */
  repeats?: number;
  /** Dialogues in flight at once. */
  concurrency: number;
  runName?: string | null;
  step?: number | null;
  /**
   * Held-out simulators: each plays every dialogue again with the same policy settings and seeds,
   * after the training simulator; absent or empty = the training simulator only.
   */
  simulators?: HeldOutSimulator[];
}
