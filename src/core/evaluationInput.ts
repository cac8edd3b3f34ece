import type { RolloutSettings } from './rolloutSettingsSchema.js';
import type { GoalType, Personality } from './scenario.js';

export interface EvaluationScenario {
  id: string;
  goalType: GoalType;
  personality: Personality;
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
}
