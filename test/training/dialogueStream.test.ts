import assert from 'node:assert/strict';
import * as fc from 'fast-check';
import type { Algorithm } from '../../src/core/training/algorithms.js';
import {
  REPORTED_IDS,
  abandonStale,
  defaultMaxWaiting,
  dialogueOf,
  endStream,
  finished,
  inFlightIds,
  initialDialogueStream,
  refill,
  streamStatus,
  takeStep,
  waitingIds,
  type DialogueStreamState,
  type RefillSettings,
  type StepTake,
  type StreamDialogue,
  type TakeResult,
  type TakeSettings,
} from '../../src/core/training/dialogueStream.js';
import { stalenessWindow, usableDialogues } from '../../src/core/training/dialogueStreamState.js';
import { dialogueStreamStateSchema } from '../../src/core/training/dialogueStreamSchema.js';
import { stepScenarioIds } from '../../src/core/training/stepPlan.js';
import { minGroupSize } from '../../src/core/training/stepRollouts.js';
import { seededRandom } from '../../src/core/seededRandom.js';
import { propertyRuns } from '../support/propertyRuns.js';

const SCENARIOS = ['a', 'b', 'c', 'd', 'e'];

function refillSettings(over: Partial<RefillSettings> = {}): RefillSettings {
  return {
    runName: 'run',
    seed: 7,
    samplesPerScenario: 4,
    maxInFlight: 10,
    maxStaleness: 1,
    maxWaiting: 100,
    dialoguesPerStep: 100,
    ...over,
  };
}

const take = (over: Partial<TakeSettings> & { step: number }): TakeSettings => ({
  dialoguesPerStep: 8,
  maxStaleness: 1,
  algorithm: 'grpo',
  ...over,
});

/** Refills at (step, version) and returns the new state with what started. */
function started(state: DialogueStreamState, over: Partial<RefillSettings> = {}, step = 1, version = 0) {
  return refill(state, refillSettings(over), { step, version }, SCENARIOS);
}

/** Finishes the dialogues ok (oldest turn at `oldest`) in the order given. */
function finishAll(state: DialogueStreamState, ids: readonly string[], oldest = 0): DialogueStreamState {
  for (const id of ids) {
    const r = finished(state, id, { ok: true, oldestTurnVersion: oldest });
    assert.ok(r.recorded, `finished ${id}`);
    state = r.state;
  }
  return state;
}

function ready(result: TakeResult): Extract<TakeResult, { ready: true }> {
  assert.ok(result.ready, 'the step should be ready');
  return result;
}

const idsOf = (dialogues: StreamDialogue[]) => dialogues.map((d) => d.rolloutId);
const byGroup = (dialogues: StreamDialogue[]) => {
  const groups = new Map<string, string[]>();
  for (const d of dialogues) groups.set(d.group, [...(groups.get(d.group) ?? []), d.rolloutId]);
  return [...groups.values()];
};

describe('the dialogue stream: refill', () => {
  it('starts whole groups up to maxInFlight, the last one partly, and its rest before any new group', () => {
    const first = started(initialDialogueStream('run'));
    assert.equal(first.start.length, 10);
    assert.deepEqual(
      byGroup(first.start).map((g) => g.length),
      [4, 4, 2],
    );
    assert.deepEqual(streamStatus(first.state).notStarted, 2);
    // One dialogue of group 0 finishes: the free slot goes to group 2's third sample.
    const one = finishAll(first.state, [first.start[0]!.rolloutId]);
    const second = started(one);
    assert.deepEqual(
      second.start.map((d) => [d.group, d.sample]),
      [[first.start[8]!.group, 2]],
    );
    assert.equal(streamStatus(second.state).inFlight, 10);
  });

  it('runs groups bigger than maxInFlight a few samples at a time, never above maxInFlight', () => {
    let state = initialDialogueStream('run');
    const seen: StreamDialogue[] = [];
    for (let round = 0; round < 4; round++) {
      const r = started(state, { maxInFlight: 3 });
      assert.equal(streamStatus(r.state).inFlight, 3);
      seen.push(...r.start);
      state = finishAll(r.state, idsOf(r.start));
    }
    assert.deepEqual(
      seen.slice(0, 8).map((d) => [d.group.split('-')[0], d.sample]),
      [
        ['g0', 0],
        ['g0', 1],
        ['g0', 2],
        ['g0', 3],
        ['g1', 0],
        ['g1', 1],
        ['g1', 2],
        ['g1', 3],
      ],
    );
  });

  it("draws groups' scenarios in a planned run's order, ids and seeds from (run, seed, group, sample) alone", () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 12, samplesPerScenario: 2 });
    const planned = [1, 2, 3].flatMap((step) =>
      stepScenarioIds({ runName: 'run', seed: 7, scenariosPerStep: 2, samplesPerScenario: 2 }, step, SCENARIOS),
    );
    assert.deepEqual(
      byGroup(r.start).map((g) => r.start.find((d) => d.rolloutId === g[0])!.scenarioId),
      planned,
    );
    assert.equal(r.start[0]!.rolloutId, `run--g0--${planned[0]}--k0`);
    assert.equal(r.start[3]!.rolloutId, `run--g1--${planned[1]}--k1`);
    assert.equal(new Set(idsOf(r.start)).size, 12);
    assert.equal(new Set(r.start.map((d) => d.seed)).size, 12);
    // Same inputs, same dialogues; another run name or seed, other ids or seeds.
    assert.deepEqual(started(initialDialogueStream('run'), { maxInFlight: 12, samplesPerScenario: 2 }), r);
    const other = started(initialDialogueStream('other'), { maxInFlight: 12, samplesPerScenario: 2 });
    assert.ok(
      idsOf(other.start).every((id) => id.startsWith('other--g')),
      'ids carry the run name',
    );
    const reseeded = started(initialDialogueStream('run'), { maxInFlight: 12, samplesPerScenario: 2, seed: 8 });
    assert.notDeepEqual(
      reseeded.start.map((d) => d.seed),
      r.start.map((d) => d.seed),
    );
  });

  it('gives a group its level from the difficulty mix in force at the step', () => {
    const mix = [
      { fromStep: 1, hard: 1 },
      { fromStep: 3, simple: 1 },
    ];
    const early = started(initialDialogueStream('run'), { difficultyMix: mix }, 1, 0);
    assert.ok(
      early.start.every((d) => d.difficulty === 'hard'),
      'hard at step 1',
    );
    const late = started(initialDialogueStream('run'), { difficultyMix: mix }, 3, 2);
    assert.ok(
      late.start.every((d) => d.difficulty === 'simple'),
      'simple at step 3',
    );
    assert.ok(
      started(initialDialogueStream('run')).start.every((d) => !('difficulty' in d)),
      'no level without a mix',
    );
  });

  it('records the version each dialogue starts on', () => {
    const r = started(initialDialogueStream('run'), {}, 4, 3);
    assert.ok(
      r.start.every((d) => d.version === 3),
      'started on version 3',
    );
  });

  it('starts nothing while the served version is too stale for the step gathered, and does at the bound', () => {
    const state = initialDialogueStream('run');
    // Step 5 with maxStaleness 1 trains on versions 3 and 4.
    assert.deepEqual(started(state, { maxStaleness: 1 }, 5, 2).start, []);
    assert.equal(started(state, { maxStaleness: 1 }, 5, 3).start.length, 10);
    assert.deepEqual(started(state, { maxStaleness: 0 }, 5, 3).start, []);
    assert.equal(started(state, { maxStaleness: 0 }, 5, 4).start.length, 10);
  });

  it('allocates no new group while maxWaiting finished dialogues wait, but starts the rest of an allocated one', () => {
    const first = started(initialDialogueStream('run'), { maxWaiting: 4 });
    // Group 0 (4 dialogues) finishes: 4 wait, so only group 2's last two samples start.
    const done = finishAll(first.state, idsOf(first.start).slice(0, 4));
    const second = started(done, { maxWaiting: 4 });
    assert.deepEqual(
      second.start.map((d) => d.sample),
      [2, 3],
    );
    assert.equal(second.state.nextGroup, 3);
    // Below the limit, new groups start again.
    assert.equal(started(done, { maxWaiting: 5 }).state.nextGroup, 4);
  });

  it('does not count against maxWaiting the finished dialogues too stale for the step: they will be dropped', () => {
    const first = started(initialDialogueStream('run'), { maxWaiting: 4 });
    // Group 0 finishes on version 0 and waits. Step 3 (maxStaleness 1) may train on version 1 and on only.
    const done = finishAll(first.state, idsOf(first.start).slice(0, 4), 0);
    const stuck = refill(done, refillSettings({ maxWaiting: 4 }), { step: 3, version: 2 }, SCENARIOS);
    assert.equal(stuck.state.nextGroup, 4, 'new groups start: the stale ones hold no place');
    assert.equal(usableDialogues(done, 3, 1).waiting, 0);
    assert.equal(usableDialogues(done, 2, 1).waiting, 4);
  });

  it('starts no group that no step within the staleness bound could take (the window), however many slots are free', () => {
    const window = { maxInFlight: 16, samplesPerScenario: 2, dialoguesPerStep: 4 };
    // Step 1 on version 0 (maxStaleness 1): steps 1 and 2 may take it, 4 dialogues each.
    const first = started(initialDialogueStream('run'), window, 1, 0);
    assert.equal(first.start.length, 8);
    const done = finishAll(first.state, idsOf(first.start), 0);
    const taken = ready(takeStep(done, take({ step: 1, dialoguesPerStep: 4 })));
    // Step 2 while version 0 is still served: only step 2 may take what starts now, and 4 wait for it.
    assert.equal(started(taken.state, window, 2, 0).start.length, 0);
    // Once version 1 is served, steps 2 and 3 may: 4 more start.
    assert.equal(started(taken.state, window, 2, 1).start.length, 4);
    assert.equal(stalenessWindow({ step: 2, version: 1 }, refillSettings(window)), 8);
  });

  it('defaults maxWaiting to the dialogues of the steps a started dialogue can still reach', () => {
    assert.equal(defaultMaxWaiting(8, 0), 8);
    assert.equal(defaultMaxWaiting(8, 2), 24);
  });
});

describe('the dialogue stream: finished', () => {
  it('records a dialogue once: a repeated or unknown id leaves the state as it was', () => {
    const r = started(initialDialogueStream('run'));
    const id = r.start[0]!.rolloutId;
    const once = finished(r.state, id, { ok: true, oldestTurnVersion: 0 });
    assert.equal(once.recorded, true);
    assert.equal(streamStatus(once.state).waiting, 1);
    const twice = finished(once.state, id, { ok: false, error: 'late' });
    assert.equal(twice.recorded, false);
    assert.equal(twice.state, once.state);
    for (const unknown of ['run--g99--a--k0', 'other--g0--a--k0', `run--g0--${r.start[0]!.scenarioId}--k9`, 'run--g0'])
      assert.equal(finished(once.state, unknown, { ok: true, oldestTurnVersion: 0 }).recorded, false, unknown);
    // Not started yet (group 2's last samples): not in flight either.
    const pending = `run--g2--${r.start[8]!.scenarioId}--k3`;
    assert.equal(finished(once.state, pending, { ok: true, oldestTurnVersion: 0 }).recorded, false);
  });

  it('counts failures and reports them with the next take', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 8 });
    let state = finished(r.state, r.start[0]!.rolloutId, { ok: false, error: 'boom' }).state;
    assert.equal(streamStatus(state).failed, 1);
    state = finishAll(state, idsOf(r.start).slice(1));
    const t = ready(takeStep(state, take({ step: 1, dialoguesPerStep: 7 })));
    assert.deepEqual(t.take.failed, [r.start[0]!.rolloutId]);
    assert.equal(t.take.taken.length, 7);
  });

  it('leaves its input state alone', () => {
    const r = started(initialDialogueStream('run'));
    const before = structuredClone(r.state);
    const after = finishAll(r.state, idsOf(r.start));
    takeStep(after, take({ step: 1 }));
    refill(after, refillSettings(), { step: 1, version: 0 }, SCENARIOS);
    assert.deepEqual(r.state, before);
  });
});

describe('the dialogue stream: takeStep', () => {
  it('is not ready until whole groups hold dialoguesPerStep, however many single dialogues have finished', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 12 });
    const [g0, g1, g2] = byGroup(r.start) as [string[], string[], string[]];
    // 3 of each group: 9 finished dialogues, no whole group.
    let state = finishAll(r.state, [...g0.slice(0, 3), ...g1.slice(0, 3), ...g2.slice(0, 3)]);
    const early = takeStep(state, take({ step: 1, dialoguesPerStep: 8 }));
    assert.equal(early.ready, false);
    assert.equal(early.ready === false && early.usable, 0);
    state = finishAll(state, [g1[3]!]);
    assert.equal(takeStep(state, take({ step: 1, dialoguesPerStep: 8 })).ready, false);
    state = finishAll(state, [g0[3]!]);
    const t = ready(takeStep(state, take({ step: 1, dialoguesPerStep: 8 })));
    assert.deepEqual(new Set(t.take.taken), new Set([...g0, ...g1]));
    // Group 2 is left waiting for the next step.
    assert.equal(streamStatus(t.state).waiting, 3);
    assert.equal(streamStatus(t.state).taken, 8);
  });

  it('takes groups in the order their last sample finished, and names the dialogues in finish order', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 12 });
    const [g0, g1, g2] = byGroup(r.start) as [string[], string[], string[]];
    const order = [g2[0]!, g0[0]!, g0[1]!, g2[1]!, g2[2]!, g0[2]!, g1[0]!, g1[1]!, g1[2]!, g1[3]!, g0[3]!, g2[3]!];
    const state = finishAll(r.state, order);
    const t = ready(takeStep(state, take({ step: 1, dialoguesPerStep: 8 })));
    // g1 completed 10th, g0 11th, g2 12th: g1 and g0 are taken.
    assert.deepEqual(
      t.groups.map((g) => g.rolloutIds),
      [g1, g0],
    );
    assert.deepEqual(
      t.take.taken,
      order.filter((id) => g0.includes(id) || g1.includes(id)),
    );
  });

  it('takes the group that reaches dialoguesPerStep whole, and none after it', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 12 });
    const state = finishAll(r.state, idsOf(r.start));
    // 6 asked: group 0 (4) is short, group 1 reaches 8 and is taken whole; group 2 waits.
    const over = ready(takeStep(state, take({ step: 1, dialoguesPerStep: 6 })));
    assert.equal(over.take.taken.length, 8);
    assert.equal(over.groups.length, 2);
    // Exactly 8 asked: two groups, not a third.
    const exact = ready(takeStep(state, take({ step: 1, dialoguesPerStep: 8 })));
    assert.equal(exact.take.taken.length, 8);
    // 4 asked: one group.
    assert.equal(ready(takeStep(state, take({ step: 1, dialoguesPerStep: 4 }))).take.taken.length, 4);
  });

  it('never takes a dialogue twice: a taken group is gone from the state', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 8 });
    const state = finishAll(r.state, idsOf(r.start));
    const first = ready(takeStep(state, take({ step: 1, dialoguesPerStep: 4 })));
    const second = ready(takeStep(first.state, take({ step: 2, dialoguesPerStep: 4 })));
    assert.equal(new Set([...first.take.taken, ...second.take.taken]).size, 8);
    assert.equal(takeStep(second.state, take({ step: 3, dialoguesPerStep: 1 })).ready, false);
    assert.deepEqual(second.state.groups, []);
  });

  it('keeps a turn exactly maxStaleness versions old and drops one a version older', () => {
    for (const maxStaleness of [0, 1, 3]) {
      const step = 6;
      const bound = step - 1 - maxStaleness;
      const r = started(initialDialogueStream('run'), { maxInFlight: 8, maxStaleness }, step, bound);
      const [g0, g1] = byGroup(r.start) as [string[], string[]];
      let state = finishAll(r.state, g0, bound);
      state = finishAll(state, g1, bound - 1);
      const t = ready(takeStep(state, take({ step, maxStaleness, dialoguesPerStep: 4 })));
      assert.deepEqual(t.take.taken, g0, `maxStaleness ${maxStaleness}`);
      assert.deepEqual(t.take.droppedStale, g1, `maxStaleness ${maxStaleness}`);
      assert.equal(streamStatus(t.state).droppedStale, 4);
    }
  });

  it("judges each dialogue's staleness by its oldest turn, then applies the survivors rule to its group", () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 8 }, 3, 1);
    const [g0, g1] = byGroup(r.start) as [string[], string[]];
    // Step 3, maxStaleness 1: versions 1 and 2 are fresh, 0 is not.
    let state = finishAll(r.state, g0.slice(0, 2), 0);
    state = finishAll(state, g0.slice(2), 1);
    state = finishAll(state, g1.slice(0, 3), 0);
    state = finishAll(state, g1.slice(3), 2);
    const t = ready(takeStep(state, take({ step: 3, dialoguesPerStep: 2 })));
    // g0 keeps its two fresh ones; g1 has one fresh survivor, too few for GRPO, dropped with its group.
    assert.deepEqual(t.take.taken, g0.slice(2));
    assert.deepEqual(t.take.droppedStale, [...g0.slice(0, 2), ...g1.slice(0, 3)]);
    assert.deepEqual(t.take.droppedShortGroup, g1.slice(3));
  });

  it('drops a GRPO group with fewer than two survivors; PPO and single samples train on one', () => {
    const grpo = started(initialDialogueStream('run'), { maxInFlight: 8 });
    const [g0, g1] = byGroup(grpo.start) as [string[], string[]];
    let state = grpo.state;
    for (const id of [...g0.slice(1), ...g1.slice(2)]) state = finished(state, id, { ok: false, error: 'x' }).state;
    state = finishAll(state, [g0[0]!, ...g1.slice(0, 2)]);
    const t = ready(takeStep(state, take({ step: 1, dialoguesPerStep: 2 })));
    assert.deepEqual(t.take.taken, g1.slice(0, 2));
    assert.deepEqual(t.take.droppedShortGroup, [g0[0]]);
    assert.equal(t.take.failed.length, 5);
    assert.equal(minGroupSize('grpo', 4), 2);

    for (const algorithm of ['ppo', 'grpo'] as Algorithm[]) {
      const single = started(initialDialogueStream('run'), { maxInFlight: 3, samplesPerScenario: 1 });
      let s = finished(single.state, single.start[0]!.rolloutId, { ok: false, error: 'x' }).state;
      s = finishAll(s, idsOf(single.start).slice(1));
      const one = ready(takeStep(s, take({ step: 1, algorithm, dialoguesPerStep: 2 })));
      assert.deepEqual(one.take.taken, idsOf(single.start).slice(1), algorithm);
    }
  });

  it('applies drops even when not ready, and names them in the next take', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 8 }, 2, 0);
    const [g0, g1] = byGroup(r.start) as [string[], string[]];
    // Step 3 (maxStaleness 1) keeps versions 1 and 2: group 0, from version 0, is stale.
    const state = finishAll(r.state, g0, 0);
    const early = takeStep(state, take({ step: 3, dialoguesPerStep: 4 }));
    assert.equal(early.ready, false);
    assert.equal(streamStatus(early.state).droppedStale, 4);
    assert.equal(streamStatus(early.state).waiting, 0);
    const t = ready(takeStep(finishAll(early.state, g1, 1), take({ step: 3, dialoguesPerStep: 4 })));
    assert.deepEqual(t.take.taken, g1);
    assert.deepEqual(t.take.droppedStale, g0);
    // Reported once: the next take starts a fresh report.
    assert.deepEqual(t.state.unreported, { droppedStale: [], droppedShortGroup: [], failed: [], omitted: 0 });
  });

  it('counts as carried over the dialogues a later step takes than the one gathered when they started', () => {
    const first = started(initialDialogueStream('run'), { maxInFlight: 8 }, 1, 0);
    const [g0, g1] = byGroup(first.start) as [string[], string[]];
    const t1 = ready(takeStep(finishAll(first.state, g0), take({ step: 1, dialoguesPerStep: 4 })));
    assert.equal(t1.take.carriedOver, 0);
    const refilled = started(t1.state, { maxInFlight: 8 }, 2, 0);
    const g2 = byGroup(refilled.start)[0]!;
    const state = finishAll(refilled.state, [...g2, ...g1]);
    const t2 = ready(takeStep(state, take({ step: 2, dialoguesPerStep: 8 })));
    assert.equal(t2.take.carriedOver, 4);
    assert.equal(streamStatus(t2.state).carriedOver, 4);
    assert.equal(streamStatus(t2.state).taken, 12);
  });

  it('refuses a step at or before the last one that took', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 4 });
    const t = ready(takeStep(finishAll(r.state, idsOf(r.start)), take({ step: 2, dialoguesPerStep: 4 })));
    assert.throws(() => takeStep(t.state, take({ step: 2 })), /step 2 takes dialogues after step 2/);
    assert.throws(() => takeStep(t.state, take({ step: 1 })), /after step 2/);
    assert.throws(() => started(t.state, {}, 2, 1), /dialogues started for step 2 after step 2/);
    assert.equal(started(t.state, {}, 3, 2).start.length, 10);
  });

  it('keeps at most REPORTED_IDS ids per list and counts the rest', () => {
    const n = REPORTED_IDS + 5;
    const r = started(initialDialogueStream('run'), {
      maxInFlight: n,
      samplesPerScenario: 1,
      maxWaiting: n,
      dialoguesPerStep: n,
    });
    let state = r.state;
    for (const d of r.start) state = finished(state, d.rolloutId, { ok: false, error: 'x' }).state;
    assert.equal(state.unreported.failed.length, REPORTED_IDS);
    assert.equal(state.unreported.omitted, 5);
    assert.equal(streamStatus(state).failed, n);
  });
});

describe('the dialogue stream: abandonStale, endStream and lookups', () => {
  it('marks dialogues still running on a version below the bound abandoned, counts them stale, and ignores their late signal', () => {
    const first = started(initialDialogueStream('run'), { maxInFlight: 4, samplesPerScenario: 2 }, 1, 0);
    const second = started(first.state, { maxInFlight: 8, samplesPerScenario: 2 }, 1, 1);
    const old = idsOf(first.start);
    const fresh = idsOf(second.start);
    // Step 3 with maxStaleness 1 takes version 1 and newer: version 0 is below the bound.
    const r = abandonStale(second.state, 3, 1);
    assert.deepEqual(r.abandoned.sort(), [...old].sort());
    assert.equal(streamStatus(r.state).droppedStale, 4);
    assert.equal(streamStatus(r.state).abandoned, 4);
    assert.equal(streamStatus(r.state).inFlight, 4);
    assert.deepEqual(r.state.unreported.droppedStale.sort(), [...old].sort());
    assert.equal(finished(r.state, old[0]!, { ok: true }).recorded, false, 'a late signal of an abandoned one');
    assert.ok(finished(r.state, fresh[0]!, { ok: true }).recorded);
    // At the bound nothing is abandoned, and the state is returned as it was.
    const none = abandonStale(second.state, 2, 1);
    assert.deepEqual(none.abandoned, []);
    assert.equal(none.state, second.state);
  });

  it('ends the stream: every dialogue still running is cancelled and counted, the finished ones stay', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 6, samplesPerScenario: 2 });
    const ids = idsOf(r.start);
    const state = finishAll(r.state, ids.slice(0, 2));
    const end = endStream(state);
    assert.deepEqual(end.cancelled, ids.slice(2));
    const status = streamStatus(end.state);
    assert.equal(status.cancelled, 4);
    assert.equal(status.inFlight, 0);
    assert.equal(status.waiting, 2);
    assert.equal(status.started, status.taken + status.waiting + status.cancelled);
    assert.equal(finished(end.state, ids[3]!, { ok: true }).recorded, false);
    assert.deepEqual(inFlightIds(state), ids.slice(2), 'its input is left alone');
  });

  it('finds a dialogue it holds (group key, scenario, step and version it started on), and lists the finished ones waiting', () => {
    const r = started(initialDialogueStream('run'), { maxInFlight: 4, samplesPerScenario: 2 }, 3, 2);
    const d = r.start[1]!;
    assert.deepEqual(dialogueOf(r.state, d.rolloutId), {
      group: d.group,
      scenarioId: d.scenarioId,
      step: 3,
      version: 2,
    });
    assert.equal(dialogueOf(r.state, 'run--g99--a--k0'), null);
    assert.equal(dialogueOf(r.state, 'other--g0--a--k0'), null);
    const state = finishAll(r.state, [d.rolloutId], 2);
    assert.deepEqual(waitingIds(state), [d.rolloutId]);
    // A dialogue that finished without naming its oldest turn counts the version it started on.
    const implicit = finished(r.state, r.start[0]!.rolloutId, { ok: true }).state;
    const sample = implicit.groups[0]!.samples[0]!;
    assert.ok(sample.state === 'ok' && sample.oldest === 2);
  });
});

// ----- simulated runs -----

interface SimConfig {
  samplesPerScenario: number;
  scenariosPerStep: number;
  maxInFlight: number;
  maxStaleness: number;
  algorithm: Algorithm;
  failShare: number;
  steps: number;
  seed: number;
  /** Chance per event that the optimizer publishes the last step taken (otherwise it lags). */
  publishShare: number;
  /** Check the partition of the started dialogues every this many events (1: every event). */
  fullCheckEvery?: number;
}

interface SimTrace {
  takes: StepTake[];
  starts: string[];
  state: DialogueStreamState;
  maxJson: number;
  maxGroups: number;
}

/**
 * A run: dialogues finish in a random order (some fail), the optimizer publishes with a lag, and
 * after every event the workflow takes (if it can) and refills, as the module comment says. Checks
 * the invariants after every event, and drains at the end: no refill, every dialogue finishes, steps
 * take or drop what is left.
 */
function simulate(cfg: SimConfig, observe: (state: DialogueStreamState) => void = () => {}): SimTrace {
  const random = seededRandom(cfg.seed);
  const dialoguesPerStep = cfg.scenariosPerStep * cfg.samplesPerScenario;
  const settings: RefillSettings = {
    runName: 'sim',
    seed: cfg.seed,
    samplesPerScenario: cfg.samplesPerScenario,
    maxInFlight: cfg.maxInFlight,
    maxStaleness: cfg.maxStaleness,
    maxWaiting: defaultMaxWaiting(dialoguesPerStep, cfg.maxStaleness),
    dialoguesPerStep,
  };
  let state = initialDialogueStream('sim');
  let version = 0;
  let step = 1;
  const info = new Map<string, StreamDialogue>();
  const oldest = new Map<string, number>();
  const okIds = new Set<string>();
  const failedIds = new Set<string>();
  const takenIds = new Set<string>();
  const droppedIds = new Set<string>();
  const groupsTaken = new Set<string>();
  const members = new Map<string, string[]>();
  const finishIndex = new Map<string, number>();
  const reportedDrops = new Set<string>();
  const reportedFailed = new Set<string>();
  const takes: StepTake[] = [];
  const starts: string[] = [];
  let maxJson = 0;
  let maxGroups = 0;

  let checks = 0;
  const check = (full = false) => {
    const status = streamStatus(state);
    assert.ok(status.inFlight <= cfg.maxInFlight, 'in flight above maxInFlight');
    assert.equal(
      status.started,
      status.inFlight + status.waiting + status.taken + status.droppedStale + status.droppedShortGroup + status.failed,
      'the counters do not add up',
    );
    maxJson = Math.max(maxJson, JSON.stringify(state).length);
    maxGroups = Math.max(maxGroups, state.groups.length);
    observe(state);
    if (!full && checks++ % (cfg.fullCheckEvery ?? 1) !== 0) return;
    const flying = inFlightIds(state);
    assert.equal(flying.length, status.inFlight);
    const waiting = [...okIds].filter((id) => !takenIds.has(id) && !droppedIds.has(id));
    // Started = in flight + waiting + taken + dropped + failed, disjoint.
    const parts = [flying, waiting, [...takenIds], [...droppedIds], [...failedIds]];
    const all = parts.flat();
    assert.equal(new Set(all).size, all.length, 'the parts overlap');
    assert.deepEqual(new Set(all), new Set(starts), 'the parts do not cover the started dialogues');
    assert.equal(status.started, starts.length);
    assert.equal(status.taken, takenIds.size);
    assert.equal(status.failed, failedIds.size);
    assert.equal(status.droppedStale + status.droppedShortGroup, droppedIds.size);
    assert.equal(state.unreported.omitted, 0);
  };

  const tryTake = (perStep: number) => {
    const result = takeStep(state, {
      step,
      dialoguesPerStep: perStep,
      maxStaleness: cfg.maxStaleness,
      algorithm: cfg.algorithm,
    });
    state = result.state;
    const floor = step - 1 - cfg.maxStaleness;
    // Drops apply at once; a ready take names them, with those of the step's earlier calls.
    const lists = result.ready ? result.take : result.state.unreported;
    for (const id of [...lists.droppedStale, ...lists.droppedShortGroup]) {
      if (droppedIds.has(id)) continue;
      assert.ok(okIds.has(id) && !takenIds.has(id), `dropped ${id} wrongly`);
      droppedIds.add(id);
    }
    for (const id of lists.droppedStale) assert.ok(oldest.get(id)! < floor, `step ${step} dropped fresh ${id}`);
    if (!result.ready) return false;
    const t = result.take;
    for (const id of t.taken) {
      assert.ok(okIds.has(id), `took ${id}, which has not finished ok`);
      assert.ok(!takenIds.has(id), `took ${id} twice`);
      assert.ok(!droppedIds.has(id), `took ${id}, which was dropped`);
      assert.ok(oldest.get(id)! >= floor, `step ${step} took ${id} from version ${oldest.get(id)}`);
      takenIds.add(id);
    }
    for (const id of [...t.droppedStale, ...t.droppedShortGroup]) {
      assert.ok(!reportedDrops.has(id), `${id}'s drop reported twice`);
      reportedDrops.add(id);
    }
    for (const id of t.failed) {
      assert.ok(failedIds.has(id) && !reportedFailed.has(id), `${id}'s failure reported wrongly`);
      reportedFailed.add(id);
    }
    // Whole groups: every sample of a taken group has finished, its ok fresh ones are what is taken.
    for (const g of result.groups) {
      assert.ok(!groupsTaken.has(g.group), `group ${g.group} taken twice`);
      groupsTaken.add(g.group);
      const group = members.get(g.group) ?? [];
      assert.equal(group.length, cfg.samplesPerScenario, `group ${g.group} taken before all its samples started`);
      for (const id of group)
        assert.ok(okIds.has(id) || failedIds.has(id), `group ${g.group} taken before ${id} finished`);
      const expected = group.filter((id) => okIds.has(id) && oldest.get(id)! >= floor);
      assert.deepEqual(new Set(g.rolloutIds), new Set(expected));
      assert.ok(
        g.rolloutIds.length >= minGroupSize(cfg.algorithm, cfg.samplesPerScenario),
        `group ${g.group} too small`,
      );
    }
    // At least the step's dialogues, overshooting by less than a group.
    assert.ok(
      t.taken.length >= perStep && t.taken.length < perStep + cfg.samplesPerScenario,
      `step ${step} took ${t.taken.length}`,
    );
    // Finish order.
    const seqs = t.taken.map((id) => finishIndex.get(id)!);
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
    );
    takes.push(t);
    step++;
    return true;
  };

  const finishOne = () => {
    const flying = inFlightIds(state);
    const id = flying[Math.floor(random() * flying.length)]!;
    if (random() < cfg.failShare) {
      state = finished(state, id, { ok: false, error: 'boom' }).state;
      failedIds.add(id);
    } else {
      // The oldest turn is the version it started on, or (a hot swap before its first turn) a newer one.
      const start = info.get(id)!.version;
      const v = random() < 0.2 ? version : start;
      const r = finished(state, id, { ok: true, oldestTurnVersion: v });
      assert.ok(r.recorded, `${id} not recorded`);
      state = r.state;
      okIds.add(id);
      finishIndex.set(id, okIds.size);
      oldest.set(id, v);
    }
  };

  let events = 0;
  while (step <= cfg.steps) {
    assert.ok(events++ < cfg.steps * 200 + 1000, 'the run does not make progress');
    const r = refill(state, settings, { step, version }, SCENARIOS);
    state = r.state;
    for (const d of r.start) {
      assert.ok(!info.has(d.rolloutId), `${d.rolloutId} started twice`);
      assert.ok(d.version >= step - 1 - cfg.maxStaleness, `${d.rolloutId} started too stale for step ${step}`);
      info.set(d.rolloutId, d);
      starts.push(d.rolloutId);
      members.set(d.group, [...(members.get(d.group) ?? []), d.rolloutId]);
    }
    const status = streamStatus(state);
    const usable = usableDialogues(state, step, cfg.maxStaleness);
    const fresh = version >= step - 1 - cfg.maxStaleness;
    if (fresh)
      assert.ok(
        status.inFlight === cfg.maxInFlight ||
          (status.notStarted === 0 &&
            (usable.waiting >= settings.maxWaiting ||
              usable.waiting + usable.running >= stalenessWindow({ step, version }, settings))),
        'refill left a slot free',
      );
    check();
    const lagging = version < step - 1;
    if (lagging && (random() < cfg.publishShare || status.inFlight === 0)) version = step - 1;
    else if (status.inFlight > 0) finishOne();
    tryTake(dialoguesPerStep);
    check();
  }
  // Drain: no new group (maxWaiting 0), the rest of a partly started one, and every dialogue finishes.
  version = step - 1;
  for (;;) {
    const r = refill(state, { ...settings, maxWaiting: 0 }, { step, version }, SCENARIOS);
    assert.equal(r.state.nextGroup, state.nextGroup, 'refill allocated a group past maxWaiting');
    state = r.state;
    for (const d of r.start) {
      info.set(d.rolloutId, d);
      starts.push(d.rolloutId);
      members.set(d.group, [...(members.get(d.group) ?? []), d.rolloutId]);
    }
    if (inFlightIds(state).length === 0) break;
    while (inFlightIds(state).length > 0) finishOne();
  }
  assert.equal(streamStatus(state).notStarted, 0);
  while (state.groups.length > 0) {
    assert.ok(tryTake(1) || state.groups.length === 0, 'finished groups left that no step takes');
    version = step - 1;
  }
  check(true);
  // Every finished dialogue was taken or dropped, and every drop and failure reported once.
  assert.deepEqual(new Set([...takenIds, ...droppedIds]), okIds);
  const unreported = state.unreported;
  assert.deepEqual(
    new Set([...reportedDrops, ...unreported.droppedStale, ...unreported.droppedShortGroup]),
    droppedIds,
  );
  assert.deepEqual(new Set([...reportedFailed, ...unreported.failed]), failedIds);
  return { takes, starts, state, maxJson, maxGroups };
}

const simConfig = fc.record({
  samplesPerScenario: fc.integer({ min: 1, max: 4 }),
  scenariosPerStep: fc.integer({ min: 1, max: 3 }),
  maxInFlight: fc.integer({ min: 1, max: 12 }),
  maxStaleness: fc.integer({ min: 0, max: 2 }),
  algorithm: fc.constantFrom<Algorithm>('grpo', 'ppo'),
  failShare: fc.constantFrom(0, 0.1, 0.4),
  steps: fc.integer({ min: 1, max: 25 }),
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  publishShare: fc.constantFrom(0.05, 0.3, 1),
});

describe('the dialogue stream: simulated runs', function () {
  this.timeout(300_000);

  it('takes every finished dialogue once or drops it, in whole groups, within maxInFlight, never stuck', () => {
    const seen = { droppedStale: 0, droppedShortGroup: 0, carriedOver: 0, failed: 0, overshoot: 0, partial: 0 };
    fc.assert(
      fc.property(simConfig, (cfg) => {
        const trace = simulate(cfg);
        const counts = trace.state.counts;
        seen.droppedStale += counts.droppedStale;
        seen.droppedShortGroup += counts.droppedShortGroup;
        seen.carriedOver += counts.carriedOver;
        seen.failed += counts.failed;
        const perStep = cfg.scenariosPerStep * cfg.samplesPerScenario;
        seen.overshoot += trace.takes.filter((t) => t.taken.length > perStep).length;
        if (cfg.maxInFlight % cfg.samplesPerScenario !== 0) seen.partial++;
      }),
      propertyRuns(150),
    );
    // The runs went through every case the checks are about.
    for (const [what, times] of Object.entries(seen)) assert.ok(times > 0, `no run had ${what}`);
  });

  it('is deterministic: the same run gives the same ids, takes and state', () => {
    fc.assert(
      fc.property(simConfig, (cfg) => {
        const a = simulate(cfg);
        const b = simulate(cfg);
        assert.deepEqual(a.starts, b.starts);
        assert.deepEqual(a.takes, b.takes);
        assert.deepEqual(a.state, b.state);
      }),
      propertyRuns(30),
    );
  });

  it('stays bounded over 1000 steps with random finish orders', () => {
    for (const cfg of [
      { samplesPerScenario: 4, scenariosPerStep: 2, maxInFlight: 12, maxStaleness: 2, algorithm: 'grpo' as const },
      { samplesPerScenario: 1, scenariosPerStep: 4, maxInFlight: 6, maxStaleness: 0, algorithm: 'ppo' as const },
    ]) {
      const trace = simulate({ ...cfg, failShare: 0.1, steps: 1000, seed: 3, publishShare: 0.3, fullCheckEvery: 500 });
      const perStep = cfg.samplesPerScenario * cfg.scenariosPerStep;
      const maxWaiting = defaultMaxWaiting(perStep, cfg.maxStaleness);
      assert.equal(trace.takes.length >= 1000, true);
      // Groups held: those in flight, one partly started, and the waiting (at most maxWaiting plus what was in flight).
      assert.ok(trace.maxGroups <= 2 * cfg.maxInFlight + maxWaiting + 1, `${trace.maxGroups} groups held`);
      assert.ok(trace.maxJson < 12_000, `state of ${trace.maxJson} characters`);
      assert.ok(trace.state.counts.started > 1000 * perStep * 0.8, 'too few dialogues started');
    }
  });

  it('round-trips through JSON and its schema at every point of a run', () => {
    fc.assert(
      fc.property(simConfig, (cfg) => {
        simulate({ ...cfg, steps: Math.min(cfg.steps, 8) }, (state) => {
          assert.deepEqual(dialogueStreamStateSchema.parse(JSON.parse(JSON.stringify(state))), state);
        });
      }),
      propertyRuns(30),
    );
    // Mid-run states, with every kind of sample.
    const r = started(initialDialogueStream('run'), { maxInFlight: 10, difficultyMix: [{ fromStep: 1, hard: 1 }] });
    let state = finishAll(r.state, idsOf(r.start).slice(0, 3), 0);
    state = finished(state, r.start[4]!.rolloutId, { ok: false, error: 'x' }).state;
    state = takeStep(state, take({ step: 3, dialoguesPerStep: 4 })).state;
    const kinds = new Set(state.groups.flatMap((g) => g.samples.map((s) => s.state)));
    assert.deepEqual(kinds, new Set(['stale', 'running', 'failed', 'pending']));
    assert.deepEqual(dialogueStreamStateSchema.parse(JSON.parse(JSON.stringify(state))), state);
  });

  it("rejects a state that is not a stream's", () => {
    const state = started(initialDialogueStream('run')).state;
    const bad = (mutate: (s: DialogueStreamState) => unknown) => {
      const copy = structuredClone(state);
      mutate(copy);
      assert.equal(dialogueStreamStateSchema.safeParse(copy).success, false);
    };
    bad((s) => (s.counts.taken = -1));
    bad((s) => ((s.groups[0]!.samples[0] as { state: string }).state = 'done'));
    bad((s) => ((s.groups[0]!.samples[1] as Record<string, unknown>)['extra'] = 1));
    bad((s) => ((s as unknown as Record<string, unknown>)['groups'] = undefined));
  });
});
