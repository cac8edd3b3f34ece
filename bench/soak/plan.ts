/** Which faults a soak injects, at which steps and on which replica: from the seed alone, so a seed replays its plan. */

import { seededRandom } from '../../src/core/seededRandom.js';

/** What each fault does, and the part of its step it strikes in. */
export const SOAK_FAULTS = {
  'replica-restart': {
    when: 'rollouts',
    describe:
      "a replica's process SIGKILLed at a policy call and started again on its launch weights (its publisher reloads it)",
  },
  'resume-fails': {
    when: 'publish',
    describe: "a replica's /resume answers 500 three times in a row at the step's publish (vLLM left paused)",
  },
  'kill-publisher-download': {
    when: 'publish',
    describe:
      "a publisher worker SIGKILLed mid-download of the step's weights (its .tmp-* directory left), then a new one",
  },
  'kill-trainer': {
    when: 'optimizer',
    describe: 'the trainer SIGKILLed during the optimizer step, then restarted (snapshot + step-log replay)',
  },
  's3-outage': {
    when: 'rollouts',
    describe: 'the object store (MinIO) stopped during the dialogues, started again on the same data',
  },
} as const satisfies Record<string, { when: 'rollouts' | 'optimizer' | 'publish'; describe: string }>;

export type SoakFaultKind = keyof typeof SOAK_FAULTS;
export const SOAK_FAULT_KINDS = Object.keys(SOAK_FAULTS) as SoakFaultKind[];

export interface SoakFault {
  /** 1-based, in step order. */
  n: number;
  kind: SoakFaultKind;
  step: number;
  /** 0 or 1: the replica (or its publisher) struck, for the kinds that strike one. */
  replica: number;
}

/**
 * `count` faults on distinct steps, none on the first or the last (the run is up before the first
 * fault and every fault is over before the checks); kinds drawn without replacement until each was
 * used, then again, so a plan of at least five holds every kind.
 */
export function planSoakFaults(options: { seed: number; steps: number; count: number }): SoakFault[] {
  const { steps, count } = options;
  const free = Array.from({ length: Math.max(steps - 2, 0) }, (_, i) => i + 2);
  if (count > free.length)
    throw new Error(
      `--faults ${count}: at most ${free.length} fit in ${steps} steps (one per step, not the first or last)`,
    );
  const random = seededRandom(options.seed);
  const take = <T>(xs: T[]): T => xs.splice(Math.floor(random() * xs.length), 1)[0]!;
  let bag: SoakFaultKind[] = [];
  const chosen: Omit<SoakFault, 'n'>[] = [];
  while (chosen.length < count) {
    if (bag.length === 0) bag = [...SOAK_FAULT_KINDS];
    chosen.push({ kind: take(bag), step: take(free), replica: random() < 0.5 ? 0 : 1 });
  }
  return chosen.sort((a, b) => a.step - b.step).map((f, i) => ({ ...f, n: i + 1 }));
}
