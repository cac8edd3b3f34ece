import { ApplicationFailure } from '@temporalio/common';
import { seededRandom } from '../seededRandom.js';
import { stableHash } from '../seeds.js';

/** The order of the train split in one epoch: a Fisher-Yates shuffle seeded by (seed, epoch). */
export function epochOrder(ids: readonly string[], seed: number, epoch: number): string[] {
  const order = [...ids].sort();
  const random = seededRandom(stableHash(`${seed}:epoch:${epoch}`));
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j] as string, order[i] as string];
  }
  return order;
}

/**
 * Scenarios of a step (1-based), chosen from (seed, step) alone: the step's window over the
 * concatenation of per-epoch shuffles. No scenario repeats within an epoch; a retried or resumed
 * step always gets the same scenarios.
 */
export function scenariosForStep(
  ids: readonly string[],
  seed: number,
  step: number,
  perStep: number,
): { ids: string[]; epoch: number } {
  if (ids.length === 0) throw ApplicationFailure.nonRetryable('no scenarios to train on', 'EmptyScenarioSplit');
  if (step < 1) throw ApplicationFailure.nonRetryable(`step must be >= 1, got ${step}`, 'BadTrainingStep');
  const chosen: string[] = [];
  const start = (step - 1) * perStep;
  let cachedEpoch = -1;
  let order: string[] = [];
  for (let position = start; position < start + perStep; position++) {
    const epoch = Math.floor(position / ids.length);
    if (epoch !== cachedEpoch) {
      order = epochOrder(ids, seed, epoch);
      cachedEpoch = epoch;
    }
    chosen.push(order[position % ids.length] as string);
  }
  return { ids: chosen, epoch: Math.floor(start / ids.length) };
}
