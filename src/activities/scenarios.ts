import { ApplicationFailure } from '@temporalio/common';
import type { Scenario } from '../core/scenario.js';
import { loadScenarioLibrary } from '../scenarios/library.js';

export interface ScenarioRef {
  /** Directory of scenario files as the workers see it (relative paths resolve against the worker's cwd). */
  dir: string;
  id: string;
}

/**
 * Loads one scenario by reference, so parents (evaluations, training steps) pass ids, not
 * profiles: their histories stay small however many dialogues they fan out.
 */
export async function loadScenario(ref: ScenarioRef): Promise<Scenario> {
  const { scenarios, problems } = loadScenarioLibrary(ref.dir);
  const found = scenarios.find((s) => s.id === ref.id);
  if (found) return found;
  const why =
    problems.length > 0
      ? `; problems: ${problems
          .slice(0, 3)
          .map((p) => `${p.file}: ${p.message}`)
          .join('; ')}`
      : '';
  throw ApplicationFailure.nonRetryable(`scenario "${ref.id}" not found in ${ref.dir}${why}`, 'ScenarioNotFound');
}
