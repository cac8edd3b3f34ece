import type * as fc from 'fast-check';

/**
 * Bounded, reproducible property runs: a fixed seed, so a failure reproduces; fast-check prints the
 * seed and the shrunk counterexample's path in its failure message.
 */
export const PROPERTY_SEED = 20_250_611;

export function propertyRuns<T>(numRuns = 200): fc.Parameters<T> {
  return { numRuns, seed: PROPERTY_SEED };
}
