import type { Scenario } from './scenario.js';
import { stableHash } from './seeds.js';

/**
 * A fingerprint of a scenario's content as a dialogue loaded it (persona, intention, opening, …):
 * two scores of one scenario id are comparable only if the file behind it was the same. Computed
 * inside workflows, so it uses the same pure hash as the seeds.
 */
export function scenarioHash(scenario: Scenario): string {
  return stableHash(JSON.stringify(scenario)).toString(16).padStart(8, '0');
}
