import { ApplicationFailure } from '@temporalio/common';
import { groupDifficulty, sharesAt } from './difficultyMix.js';
import { scenariosForStep } from './scenarioSchedule.js';
import { minGroupSize } from './stepRollouts.js';
import {
  REPORTED_IDS,
  oldestUsableVersion,
  usableDialogues,
  streamStatus,
  stalenessWindow,
  streamRolloutId,
  streamGroupKey,
  streamSeed,
  type StreamSample,
  type StreamGroup,
  type DialogueStreamState,
  type DialogueResult,
  type StreamDialogue,
  type RefillSettings,
  type StreamPosition,
  type TakeSettings,
  type StepTake,
  type TakeResult,
} from './dialogueStreamState.js';

/**
 * Steps that take the first finished dialogues, so that no step waits for its slowest one: the pure
 * bookkeeping of a stream of training dialogues. Zod-free, for the workflow bundle; the state's schema is in
 * dialogueStreamSchema.ts.
 *
 * Instead of planning a step's `scenariosPerStep x samplesPerScenario` dialogues and training when
 * the slowest has finished, the run keeps `maxInFlight` dialogues running all the time, and each
 * step trains on the first whole groups to finish. The rest run on and a later step takes them.
 *
 * Groups. Dialogues are allocated a GRPO group at a time: the run's `g`-th group (0-based, counted
 * over the whole run in `nextGroup`) samples the `g`-th scenario of the run's per-epoch shuffles
 * (the same sequence a planned run walks, `scenariosForStep`), `samplesPerScenario` times. Its
 * samples start as slots free up, so the dialogues in flight stay at exactly `maxInFlight` (even
 * below `samplesPerScenario`): a group's samples all start before a new group is allocated. A group
 * is taken only when every one of its samples has finished (ok, failed or dropped as stale); then
 * the survivors rule of planned steps applies (`keepGroups`, `minGroupSize`): a group with fewer
 * fresh successes than `minGroupSize` is dropped whole (`droppedShortGroup`).
 *
 * Ids. Dialogue `k` of group `g` is `<run>--g<g>--<scenario>--k<k>`, its seed a hash of (run seed,
 * g, k): unique across the run, stable on replay, and apart from a planned run's `<run>--s<step>--…`.
 *
 * Versions and staleness. Version `v` is the weights after step `v` (the base model is 0); step `s`
 * trains version `s - 1` into version `s`, so a turn sampled from version `v` is `s - 1 - v`
 * versions stale when step `s` trains on it. Step `s` keeps a dialogue whose oldest turn is at most
 * `maxStaleness` stale, `oldestTurnVersion >= s - 1 - maxStaleness`, and drops it otherwise (counted
 * and reported, never trained on). `refill` starts nothing while the version dialogues would sample
 * is already too stale for the step being gathered (the check `pipelinedTick` makes today).
 *
 * Exactly once. Every started dialogue is, at any time, in exactly one of: not finished (in
 * flight), finished and waiting, taken by a step, dropped as stale, dropped with its group (too few
 * survivors), failed. A dialogue leaves "waiting" once, so none is trained on twice; a finished one
 * is taken unless the staleness bound or the survivors rule drops it. `finished` ignores ids it
 * does not hold (a duplicate signal, or one from before a reset), so a repeated signal is harmless.
 *
 * Bounded. The state holds only the groups not yet resolved: at most `maxInFlight` dialogues in
 * flight, at most `maxWaiting` (plus what was in flight) finished and waiting (`refill` allocates no
 * new group while that many wait), one partly started group, and the ids dropped or failed since the
 * last step that took dialogues (their record names them), cut at REPORTED_IDS. Taken ids are handed
 * to the step's record and forgotten; counters remain.
 *
 * Use in the workflow (not done here). The dialogues run as child workflows with
 * ParentClosePolicy ABANDON, so they outlive a continue-as-new of the training workflow; each one
 * signals the training workflow (by workflow id, so the signal reaches the newest run) when it ends,
 * ok with the oldest policy version its turns were sampled from, or failed with its error. The
 * signal handler calls `finished`; after each signal (and each publish) the workflow calls
 * `takeStep` for the step it gathers (which also drops what became stale and records it) and then
 * `refill`, starting the dialogues it returns. The state goes through continue-as-new in the
 * workflow's state (signals handled before the run continues are in it; later ones reach the next
 * run, which holds the same ids). Each function returns a new state and leaves its input alone.
 */

export * from './dialogueStreamState.js';

function copy(state: DialogueStreamState): DialogueStreamState {
  return {
    ...state,
    groups: state.groups.map((g) => ({ ...g, samples: g.samples.map((s) => ({ ...s })) })),
    counts: { ...state.counts },
    unreported: {
      droppedStale: [...state.unreported.droppedStale],
      droppedShortGroup: [...state.unreported.droppedShortGroup],
      failed: [...state.unreported.failed],
      omitted: state.unreported.omitted,
    },
  };
}

function report(state: DialogueStreamState, list: 'droppedStale' | 'droppedShortGroup' | 'failed', id: string): void {
  if (state.unreported[list].length < REPORTED_IDS) state.unreported[list].push(id);
  else state.unreported.omitted++;
}

/** The id of sample `k` of an allocated group. */
const sampleId = (runName: string, group: StreamGroup, k: number): string =>
  streamRolloutId(runName, group.index, group.scenarioId, k);

const isOpen = (s: StreamSample): boolean => s.state === 'pending' || s.state === 'running';

/**
 * The dialogues to start now, up to `maxInFlight` running: first the not yet started samples of
 * allocated groups, then new groups while fewer than `maxWaiting` finished dialogues wait that step
 * `at.step` may still train on and the staleness window is not full (stalenessWindow). Nothing while
 * `at.version` is too stale for step `at.step`. `scenarioIds` is the train split.
 */
export function refill(
  state: DialogueStreamState,
  settings: RefillSettings,
  at: StreamPosition,
  scenarioIds: readonly string[],
): { state: DialogueStreamState; start: StreamDialogue[] } {
  if (at.step <= state.lastStep)
    throw ApplicationFailure.nonRetryable(
      `dialogues started for step ${at.step} after step ${state.lastStep} took its dialogues`,
      'BadDialogueStream',
    );
  const start: StreamDialogue[] = [];
  if (at.version < oldestUsableVersion(at.step, settings.maxStaleness)) return { state, start };
  const next = copy(state);
  const status = streamStatus(next);
  const { waiting, running } = usableDialogues(next, at.step, settings.maxStaleness);
  let outstanding = waiting + running;
  const window = stalenessWindow(at, settings);
  let free = settings.maxInFlight - status.inFlight;
  const startSample = (group: StreamGroup, k: number): void => {
    group.samples[k] = { state: 'running', step: at.step, version: at.version };
    next.counts.started++;
    free--;
    outstanding++;
    start.push({
      rolloutId: sampleId(next.runName, group, k),
      scenarioId: group.scenarioId,
      group: streamGroupKey(group.index, group.scenarioId),
      sample: k,
      seed: streamSeed(settings.seed, group.index, k),
      version: at.version,
      ...(group.difficulty !== undefined ? { difficulty: group.difficulty } : {}),
    });
  };
  const startPending = (group: StreamGroup): void => {
    group.samples.forEach((s, k) => {
      if (free > 0 && s.state === 'pending') startSample(group, k);
    });
  };
  for (const group of next.groups) startPending(group);
  while (free > 0 && waiting < settings.maxWaiting && outstanding < window) {
    const index = next.nextGroup++;
    const [scenarioId] = scenariosForStep(scenarioIds, settings.seed, index + 1, 1).ids as [string];
    const group: StreamGroup = {
      index,
      scenarioId,
      ...(settings.difficultyMix
        ? { difficulty: groupDifficulty(sharesAt(settings.difficultyMix, at.step), settings.seed, index) }
        : {}),
      samples: Array.from({ length: settings.samplesPerScenario }, (): StreamSample => ({ state: 'pending' })),
    };
    next.groups.push(group);
    startPending(group);
  }
  return { state: next, start };
}

/**
 * A dialogue ended (its signal). `recorded` is false, and the state unchanged, for an id the stream
 * does not have in flight: a repeated signal, or one it never started.
 */
export function finished(
  state: DialogueStreamState,
  rolloutId: string,
  result: DialogueResult,
): { state: DialogueStreamState; recorded: boolean } {
  const found = locate(state, rolloutId);
  if (!found) return { state, recorded: false };
  const running = state.groups[found.group]!.samples[found.sample]!;
  if (running.state !== 'running') return { state, recorded: false };
  const next = copy(state);
  const seq = ++next.finishes;
  const { step, version } = running;
  if (result.ok) {
    next.groups[found.group]!.samples[found.sample] = {
      state: 'ok',
      step,
      version,
      seq,
      oldest: result.oldestTurnVersion ?? version,
    };
  } else {
    next.groups[found.group]!.samples[found.sample] = { state: 'failed', step, version, seq };
    next.counts.failed++;
    report(next, 'failed', rolloutId);
  }
  return { state: next, recorded: true };
}

/**
 * The dialogues still running whose version is already below the staleness bound of step `step`:
 * no step can take them, so they are marked abandoned (counted and reported as stale) and their ids
 * come back for the workflow to cancel. A later signal from one of them is ignored.
 */
export function abandonStale(
  state: DialogueStreamState,
  step: number,
  maxStaleness: number,
): { state: DialogueStreamState; abandoned: string[] } {
  const floor = oldestUsableVersion(step, maxStaleness);
  if (!state.groups.some((g) => g.samples.some((s) => s.state === 'running' && s.version < floor)))
    return { state, abandoned: [] };
  const { next, ids } = stopRunning(state, (version) => version < floor, 'abandoned');
  next.counts.droppedStale += ids.length;
  next.counts.abandoned += ids.length;
  for (const id of ids) report(next, 'droppedStale', id);
  return { state: next, abandoned: ids };
}

/** The run ends: the dialogues still running are marked cancelled (counted), their ids come back to cancel. */
export function endStream(state: DialogueStreamState): { state: DialogueStreamState; cancelled: string[] } {
  const { next, ids } = stopRunning(state, () => true, 'cancelled');
  next.counts.cancelled += ids.length;
  return { state: next, cancelled: ids };
}

/** A copy of `state` with the running dialogues whose version `stops` marked `as`, and their ids. */
function stopRunning(
  state: DialogueStreamState,
  stops: (version: number) => boolean,
  as: 'abandoned' | 'cancelled',
): { next: DialogueStreamState; ids: string[] } {
  const next = copy(state);
  const ids: string[] = [];
  for (const group of next.groups)
    group.samples.forEach((s, k) => {
      if (s.state !== 'running' || !stops(s.version)) return;
      group.samples[k] = { state: as, step: s.step, version: s.version };
      ids.push(sampleId(next.runName, group, k));
    });
  return { next, ids };
}

/** The ids of the dialogues finished ok and not yet taken or dropped (what the run keeps results of). */
export function waitingIds(state: DialogueStreamState): string[] {
  return idsIn(state, 'ok');
}

/** A dialogue the stream holds: its GRPO group's key, scenario, and the step and version it started on. */
export function dialogueOf(
  state: DialogueStreamState,
  rolloutId: string,
): { group: string; scenarioId: string; step: number; version: number } | null {
  const found = locate(state, rolloutId);
  if (!found) return null;
  const group = state.groups[found.group]!;
  const sample = group.samples[found.sample]!;
  if (sample.state === 'pending') return null;
  return {
    group: streamGroupKey(group.index, group.scenarioId),
    scenarioId: group.scenarioId,
    step: sample.step,
    version: sample.version,
  };
}

/** Where the stream holds a dialogue: its group's index and sample, read from the id. */
function locate(state: DialogueStreamState, rolloutId: string): { group: number; sample: number } | null {
  const prefix = `${state.runName}--g`;
  const parsed = rolloutId.startsWith(prefix) ? /^(\d+)--.*--k(\d+)$/.exec(rolloutId.slice(prefix.length)) : null;
  if (!parsed) return null;
  const sample = Number(parsed[2]);
  const group = state.groups.findIndex((g) => g.index === Number(parsed[1]));
  const found = state.groups[group];
  return found && sample < found.samples.length && sampleId(state.runName, found, sample) === rolloutId
    ? { group, sample }
    : null;
}

/**
 * Step `step`'s take. First it drops the finished dialogues too stale for the step (their oldest
 * turn's version below `step - 1 - maxStaleness`) and the finished groups with too few fresh
 * survivors (`minGroupSize`); these drops stand even when the step is not ready. Then it takes whole
 * finished groups in the order their last sample finished until at least `dialoguesPerStep`
 * dialogues: the group that reaches the count is taken whole, so a step may train on up to
 * `samplesPerScenario - 1` more; groups after it wait for the next step. Not ready while the
 * finished groups hold fewer than `dialoguesPerStep` fresh dialogues.
 */
export function takeStep(state: DialogueStreamState, settings: TakeSettings): TakeResult {
  const { step, dialoguesPerStep, maxStaleness, algorithm } = settings;
  if (step <= state.lastStep)
    throw ApplicationFailure.nonRetryable(
      `step ${step} takes dialogues after step ${state.lastStep} took them`,
      'BadDialogueStream',
    );
  const next = copy(state);
  const floor = oldestUsableVersion(step, maxStaleness);
  const idOf = (group: StreamGroup, k: number) => sampleId(next.runName, group, k);
  for (const group of next.groups)
    group.samples.forEach((s, k) => {
      if (s.state === 'ok' && s.oldest < floor) {
        group.samples[k] = { ...s, state: 'stale' };
        next.counts.droppedStale++;
        report(next, 'droppedStale', idOf(group, k));
      }
    });

  const usable: { group: StreamGroup; last: number; fresh: number }[] = [];
  next.groups = next.groups.filter((group) => {
    if (group.samples.some(isOpen)) return true;
    const fresh = group.samples.filter((s) => s.state === 'ok').length;
    if (fresh > 0 && fresh >= minGroupSize(algorithm, group.samples.length)) {
      usable.push({ group, last: Math.max(...group.samples.map((s) => ('seq' in s ? s.seq : 0))), fresh });
      return true;
    }
    group.samples.forEach((s, k) => {
      if (s.state === 'ok') {
        next.counts.droppedShortGroup++;
        report(next, 'droppedShortGroup', idOf(group, k));
      }
    });
    return false;
  });
  const available = usable.reduce((sum, u) => sum + u.fresh, 0);
  const wanted = Math.max(1, dialoguesPerStep);
  if (available < wanted) return { ready: false, state: next, usable: available };

  usable.sort((a, b) => a.last - b.last);
  const chosen: StreamGroup[] = [];
  let count = 0;
  for (const u of usable) {
    if (count >= wanted) break;
    chosen.push(u.group);
    count += u.fresh;
  }
  const taken: { id: string; seq: number; carried: boolean }[] = [];
  const groups = chosen.map((group) => {
    const members: string[] = [];
    const versions: number[] = [];
    group.samples.forEach((s, k) => {
      if (s.state !== 'ok') return;
      members.push(idOf(group, k));
      versions.push(s.oldest);
      taken.push({ id: idOf(group, k), seq: s.seq, carried: s.step < step });
    });
    return {
      group: streamGroupKey(group.index, group.scenarioId),
      scenarioId: group.scenarioId,
      rolloutIds: members,
      versions,
    };
  });
  taken.sort((a, b) => a.seq - b.seq);
  const carriedOver = taken.filter((t) => t.carried).length;
  next.groups = next.groups.filter((g) => !chosen.includes(g));
  next.counts.taken += taken.length;
  next.counts.carriedOver += carriedOver;
  next.lastStep = step;
  const take: StepTake = { step, taken: taken.map((t) => t.id), carriedOver, ...next.unreported };
  next.unreported = { droppedStale: [], droppedShortGroup: [], failed: [], omitted: 0 };
  return { ready: true, state: next, take, groups };
}

export { streamStatus, type DialogueStreamStatus } from './dialogueStreamState.js';

/** The ids of the dialogues in flight, in allocation order (the children whose signals the run awaits). */
export function inFlightIds(state: DialogueStreamState): string[] {
  return idsIn(state, 'running');
}

/** The ids of the dialogues in `kind`, in allocation order. */
function idsIn(state: DialogueStreamState, kind: StreamSample['state']): string[] {
  const ids: string[] = [];
  for (const group of state.groups)
    group.samples.forEach((s, k) => {
      if (s.state === kind) ids.push(sampleId(state.runName, group, k));
    });
  return ids;
}
