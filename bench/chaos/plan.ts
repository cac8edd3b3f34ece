/** Which faults a soak injects and where: chosen from the seed alone, so a seed replays the same plan. */

import { seededRandom } from '../../src/core/seededRandom.js';

export type FaultPhase = 'rollouts' | 'optimizer';

/** What each fault does; `phase` is the part of a step it is injected into. */
export const FAULT_KINDS = {
  'kill-llm-worker': { phase: 'rollouts', describe: 'SIGKILL of the LLM worker process, then a new one' },
  'kill-llm-worker-opening': {
    phase: 'rollouts',
    describe: "SIGKILL of the LLM worker at a simulator's opening (a scenario without firstMessage), then a new one",
  },
  'stop-llm-worker': {
    phase: 'rollouts',
    describe:
      'SIGSTOP of the LLM worker past the workflow-task timeout, then SIGCONT (a zombie; the second worker takes over)',
  },
  'partition-llm-worker': {
    phase: 'rollouts',
    describe:
      'the second LLM worker cut off from the Temporal frontend (not from the LLMs and the store) past the workflow-task timeout',
  },
  'journal-write-fails': {
    phase: 'rollouts',
    describe: "a turn journal write after a finished call fails once (the worker's test-only switch)",
  },
  'sampling-simulator': {
    phase: 'rollouts',
    describe:
      'the simulator samples (a request made again gets another answer) and the LLM worker is SIGKILLed at an analysis',
  },
  'kill-dev-server': { phase: 'rollouts', describe: 'SIGKILL of the Temporal dev server, then a restart' },
  'policy-outage': { phase: 'rollouts', describe: 'policy endpoint answers 500 until the run waits for the operator' },
  'simulator-outage': {
    phase: 'rollouts',
    describe: 'simulator endpoint answers 500 until the run waits for the operator',
  },
  'kill-optimizer-worker': {
    phase: 'optimizer',
    describe: 'SIGKILL of the optimizer worker during its call, then a new one',
  },
  'kill-trainer': {
    phase: 'optimizer',
    describe:
      'SIGKILL of the trainer during a step (a snapshot every 3 steps: mostly between snapshots), then a restart that replays the logged steps',
  },
  'trainer-during-update': { phase: 'optimizer', describe: 'trainer raises between two optimizer updates of a step' },
  'trainer-after-update': { phase: 'optimizer', describe: 'trainer raises after the update changed the weights' },
  'trainer-after-commit': { phase: 'optimizer', describe: "trainer raises after the checkpoint's commit" },
  'trainer-disk-full': {
    phase: 'optimizer',
    describe: 'trainer state directory full during the commit (HTTP 507), operator resumes',
  },
} as const satisfies Record<string, { phase: FaultPhase; describe: string }>;

export type FaultKind = keyof typeof FAULT_KINDS;
export const ALL_FAULT_KINDS = Object.keys(FAULT_KINDS) as FaultKind[];

/** The trainer's test-only fault switch point behind each switch fault. */
export const SWITCH_POINTS: Partial<Record<FaultKind, string>> = {
  'trainer-during-update': 'during_update',
  'trainer-after-update': 'after_update',
  'trainer-after-commit': 'after_commit',
  'trainer-disk-full': 'during_commit',
};

export interface PlannedFault {
  /** 1-based, in injection order. */
  n: number;
  kind: FaultKind;
  step: number;
  phase: FaultPhase;
}

/**
 * `count` faults over `steps` steps: at most one per phase of a step, so faults of one step never
 * interfere with each other (a trainer restart would re-arm a switch fault of the same step).
 * Kinds are drawn without replacement until each was used, then again.
 */
export function planFaults(options: {
  seed: number;
  steps: number;
  count: number;
  kinds: FaultKind[];
  /**
   * The last step whose dialogues a fault may strike (default `steps`). Steps that take the first
   * finished dialogues start the last step's dialogues while the step before trains: few or none are
   * left to strike once the run is at the last step.
   */
  lastRolloutStep?: number;
}): PlannedFault[] {
  const { steps, count, kinds } = options;
  const rolloutSteps = Math.min(steps, options.lastRolloutStep ?? steps);
  if (kinds.length === 0) throw new Error('no fault kinds to choose from');
  const phases = new Set(kinds.map((k) => FAULT_KINDS[k].phase));
  const capacity = (phases.has('rollouts') ? rolloutSteps : 0) + (phases.has('optimizer') ? steps : 0);
  if (count > capacity)
    throw new Error(
      `--faults ${count}: at most ${capacity} fit in ${steps} steps (one per step and phase of the kinds chosen)`,
    );
  const random = seededRandom(options.seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
  const free: Record<FaultPhase, number[]> = {
    rollouts: Array.from({ length: rolloutSteps }, (_, i) => i + 1),
    optimizer: Array.from({ length: steps }, (_, i) => i + 1),
  };
  let bag: FaultKind[] = [];
  const chosen: Omit<PlannedFault, 'n'>[] = [];
  while (chosen.length < count) {
    if (bag.length === 0) bag = [...kinds];
    const usable = bag.filter((k) => free[FAULT_KINDS[k].phase].length > 0);
    if (usable.length === 0) {
      bag = [];
      continue;
    }
    const kind = pick(usable);
    bag.splice(bag.indexOf(kind), 1);
    const phase = FAULT_KINDS[kind].phase;
    const step = pick(free[phase]);
    free[phase].splice(free[phase].indexOf(step), 1);
    chosen.push({ kind, step, phase });
  }
  return chosen
    .sort((a, b) => a.step - b.step || (a.phase === b.phase ? 0 : a.phase === 'rollouts' ? -1 : 1))
    .map((f, i) => ({ ...f, n: i + 1 }));
}

/** `ATTUNE_TRAINER_FAULT_INJECTION` for the plan's switch faults (empty when there are none). */
export function faultSwitchSpec(plan: PlannedFault[]): string {
  return plan
    .filter((f) => SWITCH_POINTS[f.kind])
    .map((f) => `${SWITCH_POINTS[f.kind]}@${f.step}:1`)
    .join(',');
}
