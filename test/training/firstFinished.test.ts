import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { Transcript } from '../../src/core/transcript.js';
import { trainingWorkflowId, type TrainingStatus } from '../../src/workflows/training.js';
import { trainingStatusQuery } from '../../src/workflows/trainingControl.js';
import { answered, eventually } from '../support/eventually.js';
import { trainerLedger } from '../support/runEssentials.js';
import { statusWhen } from '../support/statusWhen.js';
import type { FakeBehaviour } from '../support/fakeOpenAI.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

const STEPS = 3;
const SEED = 7;
/** 2 scenarios x 2 samples: the dialogues a step takes at least. */
const PER_STEP = 4;
const FIRST_FINISHED = [
  ...TINY_TRAINING('grpo', STEPS),
  'training.maxStaleness=1',
  `training.seed=${SEED}`,
  'training.stepDialogues=firstFinished',
  // Twice a step's dialogues: half of what starts for a step runs on into the next.
  'training.maxInFlight=8',
];
const BEHAVIOUR: FakeBehaviour = {
  // Calls of some dialogues take longer, so dialogues finish out of the order they started.
  // Slow calls keep dialogues in flight when the last step has trained: the end must cancel them.
  latencyFor: (ctx) => ((ctx.body.seed ?? 0) % 3 === 0 ? 1500 : 20),
  analysis: (ctx) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
};

const dialoguesOf = (m: StepMetricsRecord) => {
  assert.ok(m.dialogues, `step ${m.step}'s record names the dialogues it took`);
  return m.dialogues;
};

/** Waits until the visibility store lists no dialogue of the run as running. */
function noDialogueRunning(rig: TrainingRig, run: string): Promise<true> {
  return eventually('no dialogue of the run left running', async () => {
    for await (const w of rig.client.workflow.list({
      query: `WorkflowType = 'rollout' AND ExecutionStatus = 'Running'`,
    }))
      if (w.workflowId.startsWith(`${run}--`)) return undefined;
    return true;
  });
}

describe('steps that take the first finished dialogues (training.stepDialogues: firstFinished; real dev server, real trainer)', function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('refuses firstFinished with maxStaleness 0, naming the setting', () => {
    assert.throws(
      () => loadConfig({ env: {}, set: ['training.stepDialogues=firstFinished'] }),
      /training\.stepDialogues.*maxStaleness 1 or more/s,
    );
  });

  it('trains each finished dialogue at most once, carries the unfinished to later steps, records which each step took, and cancels what is left at the end', async () => {
    rig = await createTrainingRig({ set: FIRST_FINISHED, behaviour: BEHAVIOUR });
    await rig.startWorkers();
    const run = 'first-finished';
    const { handle } = await rig.start(run);
    const result = await handle.result();
    assert.equal(result.stepsApplied, STEPS);
    assert.equal((await rig.trainer.runState(run)).step, STEPS, 'the trainer applied exactly 3 steps');
    const ledger = await trainerLedger(rig.trainer.stateDir, run);
    assert.deepEqual(
      ledger.map((l) => l.step),
      [1, 2, 3],
      'the ledger holds each step once',
    );

    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.map((m) => m.step),
      [1, 2, 3],
    );
    const takenBy = new Map<string, number>();
    for (const m of metrics) {
      const d = dialoguesOf(m);
      assert.ok(d.taken.length >= PER_STEP, `step ${m.step} took ${d.taken.length}, at least ${PER_STEP}`);
      assert.equal(m.rollouts.ok, d.taken.length, `step ${m.step} trained on what it took`);
      for (const id of d.taken) {
        assert.ok(!takenBy.has(id), `${id} taken by step ${takenBy.get(id)} and again by step ${m.step}`);
        takenBy.set(id, m.step);
      }
      // Whole groups: a step takes both samples of each of its groups.
      const groups = new Map<string, number>();
      for (const id of d.taken) {
        const group = id.replace(/--k\d+$/, '');
        groups.set(group, (groups.get(group) ?? 0) + 1);
      }
      for (const [group, n] of groups) assert.equal(n, 2, `step ${m.step} took ${n} of group ${group}`);
      assert.deepEqual(
        Object.keys(m.trainer.staleness_histogram ?? {}).filter((k) => Number(k) > 1),
        [],
        `step ${m.step}: no sample more than maxStaleness stale`,
      );
    }
    const carried = metrics.reduce((n, m) => n + dialoguesOf(m).carriedOver, 0);
    assert.ok(carried > 0, 'some dialogues started for one step were trained on by a later one');
    assert.ok(
      metrics.slice(1).some((m) => Object.keys(m.trainer.staleness_histogram ?? {}).includes('1')),
      'a later step trained on a dialogue one version stale',
    );

    // Every dialogue trained on wrote its transcript, under its stream id, sampled from a version the bound allows.
    const transcripts = new Map<string, Transcript>();
    for (const key of await rig.store.list(`rollouts/${run}`)) {
      const t = await rig.store.getJson<Transcript>(key);
      transcripts.set(t.rolloutId, t);
    }
    // The trainer weighs each dialogue's turns by the version that dialogue sampled, not its step's oldest.
    const expected = new Map<number, Record<string, number>>();
    for (const [id, step] of takenBy) {
      const t = transcripts.get(id);
      assert.ok(t, `${id}'s transcript is in the store`);
      assert.ok(/--g\d+--/.test(id), `${id} is a stream id`);
      const sampled = Number(/@(\d+)$/.exec(t.policyModel)?.[1] ?? 0);
      const stale = String(step - 1 - sampled);
      assert.ok(step - 1 - sampled <= 1, `${id} sampled version ${sampled} and was trained by step ${step}`);
      const histogram = expected.get(step) ?? {};
      histogram[stale] = (histogram[stale] ?? 0) + t.turns.length;
      expected.set(step, histogram);
    }
    for (const m of metrics)
      assert.deepEqual(
        m.trainer.staleness_histogram,
        Object.fromEntries(Object.entries(expected.get(m.step)!).sort(([a], [b]) => Number(a) - Number(b))),
        `step ${m.step}: turns by staleness`,
      );

    // Status counts the stream over the run; what was still running at the end was cancelled.
    const status = await answered(() =>
      rig!.client.workflow.getHandle(trainingWorkflowId(run)).query<TrainingStatus>(trainingStatusQuery),
    );
    assert.ok(status.stream, 'status shows the dialogue stream');
    const s = status.stream;
    assert.equal(s.taken, takenBy.size);
    assert.equal(s.carriedOver, carried);
    assert.equal(
      s.started,
      s.taken + s.droppedStale + s.droppedShortGroup + s.failed + s.cancelled + s.inFlight + s.waiting,
      'each started dialogue is in exactly one of the counts',
    );
    assert.equal(s.inFlight, 0, 'none is left in flight at the end');
    assert.ok(s.cancelled > 0, 'dialogues were still running when the last step had trained');

    // No dialogue of the run runs on; those still running at the end were asked to cancel, none that was trained on.
    await noDialogueRunning(rig, run);
    const droppedStale = new Set(metrics.flatMap((m) => dialoguesOf(m).droppedStale));
    const cancelledAtEnd: string[] = [];
    for await (const w of rig.client.workflow.list({ query: `WorkflowType = 'rollout'` })) {
      if (!w.workflowId.startsWith(`${run}--`)) continue;
      const events = (await rig.client.workflow.getHandle(w.workflowId).fetchHistory()).events ?? [];
      if (!events.some((e) => e.workflowExecutionCancelRequestedEventAttributes)) continue;
      assert.ok(!takenBy.has(w.workflowId), `${w.workflowId} was trained on and cancelled`);
      if (!droppedStale.has(w.workflowId)) cancelledAtEnd.push(w.workflowId);
    }
    assert.ok(cancelledAtEnd.length > 0, 'the dialogues running at the end were asked to cancel');
    assert.ok(cancelledAtEnd.length <= s.cancelled);
  });

  it('counts as failed a dialogue that closed without telling (terminated by hand) once the stream has been still for dialogueWatchSeconds, and goes on', async () => {
    // One dialogue in flight at a time, held at the simulator: once it is terminated, nothing ends
    // but the watchdog's finding, and without it the run never goes on.
    rig = await createTrainingRig({
      set: [...FIRST_FINISHED, 'training.maxInFlight=1', 'training.dialogueWatchSeconds=2'],
      behaviour: { ...BEHAVIOUR, latencyFor: () => 600_000 },
    });
    await rig.startWorkers();
    const run = 'first-finished-watch';
    const { handle } = await rig.start(run);
    const victim = await eventually('a dialogue running', async () => {
      for await (const w of rig!.client.workflow.list({
        query: `WorkflowType = 'rollout' AND ExecutionStatus = 'Running'`,
      }))
        if (w.workflowId.startsWith(`${run}--`)) return w.workflowId;
      return undefined;
    });
    await rig.client.workflow.getHandle(victim).terminate('test: a dialogue closed by hand');
    rig.fake.behaviour = BEHAVIOUR;
    await statusWhen(rig, run, (st) => st.stream!.failed > 0, 'the terminated dialogue to be counted failed');
    const outcome = await handle.result();
    assert.equal(outcome.stepsApplied, STEPS);
    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.flatMap((m) => dialoguesOf(m).failed),
      [victim],
      'the step after it names the terminated dialogue failed',
    );
    assert.ok(!metrics.some((m) => dialoguesOf(m).taken.includes(victim)), 'never trained on');
    const s = (await answered(() => handle.query(trainingStatusQuery))).stream!;
    assert.equal(s.failed, 1);
    assert.equal(s.inFlight, 0);
  });

  it('pause starts no new dialogue until resumed; stop trains the step under way, then ends and cancels what runs', async () => {
    rig = await createTrainingRig({
      set: [...FIRST_FINISHED, 'training.steps=50'],
      behaviour: BEHAVIOUR,
    });
    await rig.startWorkers();
    const run = 'first-finished-ops';
    const { handle } = await rig.start(run);
    await statusWhen(rig, run, (st) => st.step >= 2, 'step 1 to be trained');

    const paused = await handle.executeUpdate<TrainingStatus, []>('pause');
    const startedAtPause = paused.stream!.started;
    const drained = await statusWhen(rig, run, (st) => st.stream!.inFlight === 0, 'the dialogues in flight to finish');
    assert.equal(drained.stream!.started, startedAtPause, 'no dialogue started while paused');

    await handle.executeUpdate('resume');
    await statusWhen(rig, run, (st) => st.stream!.started > startedAtPause, 'dialogues to start again');

    const stopping = await handle.executeUpdate<TrainingStatus, []>('stop');
    const result = await handle.result();
    assert.equal(result.stopped, true);
    assert.ok(result.stepsApplied >= stopping.step - 1 && result.stepsApplied < 50, `${result.stepsApplied} applied`);
    const metrics = await rig.metrics(run);
    assert.equal(metrics.length, result.stepsApplied, 'each applied step recorded once');
    const s = (await answered(() => handle.query(trainingStatusQuery))).stream!;
    assert.equal(s.inFlight, 0);
    assert.equal(
      s.taken,
      metrics.reduce((n, m) => n + dialoguesOf(m).taken.length, 0),
    );
    await noDialogueRunning(rig, run);
  });
});
