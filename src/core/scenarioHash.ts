import type { Scenario } from './scenario.js';
import { stableHash } from './seeds.js';

/**
 * A fingerprint of a scenario's content as a dialogue loaded it (persona, intention, opening, …):
 * two scores of one scenario id are comparable only if the file behind it was the same. Computed
 * inside workflows, so it uses the same pure hash as the seeds.
 */
export function scenarioHash(scenario: Scenario): string {
  return scenarioHashOfJson(JSON.stringify(scenario));
}

/** `scenarioHash` of a scenario given as its JSON text (what a cache of hashes keys on). */
export const scenarioHashOfJson = (json: string): string => stableHash(json).toString(16).padStart(8, '0');
