import type { SimulatorDifficulty } from '../difficulty.js';
import { stableHash } from '../seeds.js';
import type { Algorithm } from './algorithms.js';
import type { DifficultyPhase } from './difficultyMix.js';

/** The state, settings and names of a stream of training dialogues (dialogueStream.ts says how it works). */

/** One dialogue of a group, by how far it has got. */
export type StreamSample =
  /** Allocated with its group, not started yet (it starts before any new group). */
  | { state: 'pending' }
  /** Started while step `step` was gathered, sampling version `version`. */
  | { state: 'running'; step: number; version: number }
  /** Finished: `seq` is its place in the order of finishes, `oldest` its oldest turn's version. */
  | { state: 'ok'; step: number; version: number; seq: number; oldest: number }
  /** Finished with turns too stale for a step that gathered since: reported, never trained on. */
  | { state: 'stale'; step: number; version: number; seq: number; oldest: number }
  /** Still running when its version fell below the staleness bound: cancelled, counted as stale, never trained on. */
  | { state: 'abandoned'; step: number; version: number }
  /** Still running when the run ended: cancelled. */
  | { state: 'cancelled'; step: number; version: number }
  | { state: 'failed'; step: number; version: number; seq: number };

/** A group not resolved yet: some sample not finished, or all finished and waiting to be taken. */
export interface StreamGroup {
  /** The run's running group counter when it was allocated. */
  index: number;
  scenarioId: string;
  difficulty?: SimulatorDifficulty;
  /** One per sample; `samplesPerScenario` when it was allocated. */
  samples: StreamSample[];
}

export interface StreamCounts {
  /** Dialogues started. */
  started: number;
  /** Finished ok and trained on by a step. */
  taken: number;
  /** Of `taken`: taken by a later step than the one gathered when they started. */
  carriedOver: number;
  /**
   * Finished ok with turns older than the staleness bound of the step that would have taken them,
   * or abandoned in flight once its version fell below that bound.
   */
  droppedStale: number;
  /** Finished ok and fresh, but their group had too few survivors to train on. */
  droppedShortGroup: number;
  failed: number;
  /** Of `droppedStale`: still running when dropped, so cancelled. */
  abandoned: number;
  /** Still running when the run ended (finished or stopped), so cancelled. */
  cancelled: number;
}

/** What was dropped or failed since the last step that took dialogues: that step's record names them. */
export interface StreamReport {
  droppedStale: string[];
  droppedShortGroup: string[];
  failed: string[];
  /** Ids past REPORTED_IDS, left out of the lists above (the counters have them). */
  omitted: number;
}

/** The stream's state, carried through continue-as-new: JSON, bounded (see the module comment). */
export interface DialogueStreamState {
  runName: string;
  /** Groups allocated so far: the next group's index. */
  nextGroup: number;
  /** Dialogues finished so far: the next finish's `seq` is this plus one. */
  finishes: number;
  /** The last step that took dialogues (0: none yet); steps take in increasing order. */
  lastStep: number;
  /** The unresolved groups, in allocation order. */
  groups: StreamGroup[];
  counts: StreamCounts;
  unreported: StreamReport;
}

/** How a dialogue ended, as its signal says. */
export type DialogueResult =
  /** `oldestTurnVersion` absent: the version it started on (a lower bound of its turns' versions). */
  { ok: true; oldestTurnVersion?: number } | { ok: false; error: string };

/** A dialogue to start now. */
export interface StreamDialogue {
  rolloutId: string;
  scenarioId: string;
  /** The GRPO group's key (what the optimizer groups by). */
  group: string;
  /** Its place in the group. */
  sample: number;
  seed: number;
  /** The weights version it samples (what `refill` was told is served). */
  version: number;
  difficulty?: SimulatorDifficulty;
}

/** What `refill` needs from the run's settings (and the live `maxInFlight`). */
export interface RefillSettings {
  runName: string;
  seed: number;
  samplesPerScenario: number;
  maxInFlight: number;
  maxStaleness: number;
  /** No new group is allocated while this many finished dialogues wait (at least `dialoguesPerStep`). */
  maxWaiting: number;
  /**
   * A step's dialogues (scenariosPerStep x samplesPerScenario). No new group is allocated while the
   * dialogues a step may still take (finished or in flight, within the bound) fill the steps that a
   * dialogue started now can reach, this many each: what none of them could take is not started.
   */
  dialoguesPerStep: number;
  difficultyMix?: readonly DifficultyPhase[] | undefined;
}

/** Where the run is: the step being gathered (the next to take) and the weights version served now. */
export interface StreamPosition {
  step: number;
  version: number;
}

export interface TakeSettings {
  step: number;
  /** Dialogues a step trains on at least: `scenariosPerStep x samplesPerScenario` in a planned run. */
  dialoguesPerStep: number;
  maxStaleness: number;
  algorithm: Algorithm;
}

/** A step's take: its dialogues, and what was dropped or failed since the step before took. */
export interface StepTake extends StreamReport {
  step: number;
  /** Ids in the order they finished. */
  taken: string[];
  /** Of `taken`: started while an earlier step was gathered. */
  carriedOver: number;
}

/** A group a step takes: its key and scenario, its ok dialogues and the oldest version each one's turns sampled. */
export interface TakenGroup {
  group: string;
  scenarioId: string;
  rolloutIds: string[];
  versions: number[];
}

export type TakeResult =
  | { ready: true; state: DialogueStreamState; take: StepTake; groups: TakenGroup[] }
  /** Not enough whole groups yet: `usable` fresh dialogues in finished groups; drops were still applied. */
  | { ready: false; state: DialogueStreamState; usable: number };

/** Ids a state keeps for the next record at most, per list; counters cover the rest. */
export const REPORTED_IDS = 1000;

/** The staleness bound at `maxStaleness`: the steps that can take dialogues started now, times a step's dialogues. */
export function defaultMaxWaiting(dialoguesPerStep: number, maxStaleness: number): number {
  return dialoguesPerStep * (maxStaleness + 1);
}

/** The oldest version step `step` trains on: `step - 1 - maxStaleness`. */
export function oldestUsableVersion(step: number, maxStaleness: number): number {
  return step - 1 - maxStaleness;
}

export function initialDialogueStream(runName: string): DialogueStreamState {
  return {
    runName,
    nextGroup: 0,
    finishes: 0,
    lastStep: 0,
    groups: [],
    counts: {
      started: 0,
      taken: 0,
      carriedOver: 0,
      droppedStale: 0,
      droppedShortGroup: 0,
      failed: 0,
      abandoned: 0,
      cancelled: 0,
    },
    unreported: { droppedStale: [], droppedShortGroup: [], failed: [], omitted: 0 },
  };
}

/** How a run gathers a step's dialogues: the planned ones, all awaited (`planned`), or the first to finish (`firstFinished`). */
export const STEP_DIALOGUES = ['planned', 'firstFinished'] as const;
export type StepDialogues = (typeof STEP_DIALOGUES)[number];

/** The id of dialogue `sample` of the run's group `index`. */
export function streamRolloutId(runName: string, index: number, scenarioId: string, sample: number): string {
  return `${runName}--g${index}--${scenarioId}--k${sample}`;
}

/** The key the optimizer groups a group's dialogues by. */
export function streamGroupKey(index: number, scenarioId: string): string {
  return `g${index}-${scenarioId}`;
}

/** The seed of dialogue `sample` of group `index`: from (run seed, group, sample) alone. */
export function streamSeed(seed: number, index: number, sample: number): number {
  return stableHash(`${seed}:g${index}:${sample}`) % 2_147_483_647;
}

/**
 * The dialogues step `step` may still take: finished and waiting with their oldest turn within the
 * bound, and running on a version within it. Those below it will be dropped: they hold no place.
 */
export function usableDialogues(
  state: DialogueStreamState,
  step: number,
  maxStaleness: number,
): { waiting: number; running: number } {
  const floor = oldestUsableVersion(step, maxStaleness);
  let waiting = 0;
  let running = 0;
  for (const group of state.groups)
    for (const s of group.samples) {
      if (s.state === 'ok' && s.oldest >= floor) waiting++;
      else if (s.state === 'running' && s.version >= floor) running++;
    }
  return { waiting, running };
}

/**
 * How many dialogues the steps from `at.step` on can take from one started now on `at.version`: a
 * step's dialogues for each step up to the last whose bound still admits that version.
 */
export function stalenessWindow(at: StreamPosition, settings: RefillSettings): number {
  return settings.dialoguesPerStep * (at.version + settings.maxStaleness + 2 - at.step);
}

/** Where the stream stands, for `attune status` and the workflow's checks. */
export interface DialogueStreamStatus extends StreamCounts {
  /** Started and not finished. */
  inFlight: number;
  /** Allocated with their group, not started yet. */
  notStarted: number;
  /** Finished ok, waiting for a step to take them (some may prove stale or short-grouped). */
  waiting: number;
  lastStep: number;
}

export function streamStatus(state: DialogueStreamState): DialogueStreamStatus {
  let inFlight = 0;
  let notStarted = 0;
  let waiting = 0;
  for (const group of state.groups)
    for (const s of group.samples) {
      if (s.state === 'running') inFlight++;
      else if (s.state === 'pending') notStarted++;
      else if (s.state === 'ok') waiting++;
    }
  return { ...state.counts, inFlight, notStarted, waiting, lastStep: state.lastStep };
}
