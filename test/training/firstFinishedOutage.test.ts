import assert from 'node:assert/strict';
import { listWaitingRollouts } from '../../src/client/waitingRollouts.js';
import { trainingWorkflowId, type TrainingStatus } from '../../src/workflows/training.js';
import { eventually } from '../support/eventually.js';
import type { CallContext, FakeBehaviour } from '../support/fakeOpenAI.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

const STEPS = 5;
/**
 * First-finished steps that may take a dialogue up to three versions old: one that waits from step 1
 * on stays in flight (and may still be taken) until step 4 trains. Every call takes 1 s, so the
 * dialogue waits (after its first analysis and one quick retry) long before step 1 has its four dialogues.
 */
const SET = [
  ...TINY_TRAINING('grpo', STEPS),
  'training.maxStaleness=3',
  'training.stepDialogues=firstFinished',
  'training.maxInFlight=8',
  // A turn's calls retry as the more patient endpoint does: both give up after two quick attempts.
  ...['policy', 'simulator'].flatMap((e) => [`${e}.retry.maximumAttempts=2`, `${e}.retry.initialIntervalMs=100`]),
];

describe('first-finished steps: a dialogue that waits at a failed call across continue-as-new (real dev server, real trainer)', function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  /** The run's executions (its continue-as-new chain) in the order they started. */
  async function executions(run: string): Promise<string[]> {
    const runs: { runId: string; startTime: Date }[] = [];
    for await (const w of rig!.client.workflow.list({ query: `WorkflowId = '${trainingWorkflowId(run)}'` }))
      runs.push({ runId: w.runId, startTime: w.startTime });
    return runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime()).map((r) => r.runId);
  }

  const statusOf = (run: string, runId: string) =>
    rig!.client.workflow.getHandle(trainingWorkflowId(run), runId).query<TrainingStatus>('trainingStatus');

  /** Starts the run with one dialogue's analysis failing; resolves with that dialogue's id once it waits, and `fix`. */
  async function startWithOneWaiting(run: string, set = SET): Promise<{ victim: string; fix: () => void }> {
    let down = true;
    // The first dialogue whose turn 1 is analysed is the one that waits: its analysis seed names it.
    let victimSeed: number | undefined;
    const behaviour: FakeBehaviour = {
      latencyMs: 1000,
      analysis: (ctx: CallContext) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
      fault: (ctx: CallContext) => {
        if (ctx.role !== 'analysis' || ctx.turn !== 1) return undefined;
        victimSeed ??= ctx.body.seed;
        return down && ctx.body.seed === victimSeed ? '500' : undefined;
      },
    };
    rig = await createTrainingRig({ set, behaviour });
    await rig.startWorkers();
    await rig.start(run);
    const victim = await eventually(
      'the dialogue to wait at its failed analysis',
      async () => (await listWaitingRollouts(rig!.client, run))[0]?.rolloutId,
      120_000,
    );
    return { victim, fix: () => (down = false) };
  }

  it('the run after continue-as-new still counts it, and attune resume continues it to its end', async () => {
    const run = 'ff-wait-across';
    const { victim, fix } = await startWithOneWaiting(run);
    const [first, second] = await eventually(
      'the run to continue as new',
      async () => {
        const runs = await executions(run);
        return runs.length >= 2 ? runs : undefined;
      },
      300_000,
    );
    // The wait began in the first run (else the second would be told of it directly, fix or not).
    const before = await statusOf(run, first!);
    assert.equal(before.rollouts.waiting, 1, `the first run knew of the wait: ${JSON.stringify(before)}`);
    const carried = await statusOf(run, second!);
    assert.equal(carried.rollouts.waiting, 1, `the run after continue-as-new counts it: ${JSON.stringify(carried)}`);
    assert.equal(carried.phase, 'waiting-for-operator');
    assert.match(carried.blockedReason ?? '', new RegExp(`^1 dialogue waits for an operator .*${victim}.*HTTP 500`));

    fix();
    const handle = rig!.client.workflow.getHandle(trainingWorkflowId(run));
    await handle.executeUpdate<TrainingStatus, []>('resume');
    const ended = await eventually(
      'the continued dialogue to end',
      async () => {
        const { status } = await rig!.client.workflow.getHandle(victim).describe();
        return status.name === 'RUNNING' ? undefined : status.name;
      },
      120_000,
    );
    assert.equal(ended, 'COMPLETED', 'it went on from its failed call, not cancelled as stale');

    const result = await handle.result();
    assert.equal(result.stepsApplied, STEPS);
    const final = await handle.query<TrainingStatus>('trainingStatus');
    assert.equal(final.stream?.failed, 0, 'no dialogue failed');
    assert.equal(final.rollouts.waiting, undefined, 'none waits at the end');
  });

  it('a wait no operator answers ends when its dialogue is cancelled as stale: the run that cancelled it stops counting it', async () => {
    const run = 'ff-wait-cancelled';
    const { victim } = await startWithOneWaiting(run);
    const handle = rig!.client.workflow.getHandle(trainingWorkflowId(run));
    const result = await handle.result();
    assert.equal(result.stepsApplied, STEPS);
    const { status } = await rig!.client.workflow.getHandle(victim).describe();
    assert.equal(status.name, 'CANCELLED', 'step 4 could take it no more: cancelled');
    // The run that cancelled it (the first whose stream counts a dialogue abandoned) shows no wait at its end.
    const ends: TrainingStatus[] = [];
    for (const runId of await executions(run)) ends.push(await statusOf(run, runId));
    const cancelling = ends.find((s) => (s.stream?.abandoned ?? 0) > 0);
    assert.ok(cancelling, `a run cancelled it: ${JSON.stringify(ends.map((s) => s.stream))}`);
    assert.equal(cancelling.rollouts.waiting, undefined, `not counted once cancelled: ${JSON.stringify(cancelling)}`);
    assert.notEqual(cancelling.phase, 'waiting-for-operator');
    assert.ok(
      ends.slice(1, ends.indexOf(cancelling)).every((s) => s.rollouts.waiting === 1),
      'counted by every run before',
    );
  });

  it('a run that ends with a dialogue still waiting cancels it and ends done, counting no wait', async () => {
    const run = 'ff-wait-at-end';
    const oneStep = [...SET, 'training.steps=1', 'training.maxStaleness=1'];
    const { victim } = await startWithOneWaiting(run, oneStep);
    const handle = rig!.client.workflow.getHandle(trainingWorkflowId(run));
    assert.equal((await handle.result()).stepsApplied, 1);
    assert.equal((await rig!.client.workflow.getHandle(victim).describe()).status.name, 'CANCELLED');
    const final = await handle.query<TrainingStatus>('trainingStatus');
    assert.equal(final.phase, 'done', `not left waiting for an operator: ${JSON.stringify(final)}`);
    assert.equal(final.rollouts.waiting, undefined);
    assert.equal(final.blockedReason, null);
  });

  it('a waiting dialogue terminated by hand: the run whose watchdog counts it failed stops counting its wait', async () => {
    const run = 'ff-wait-terminated';
    // One dialogue in flight, and it waits: once it is terminated, the stream is still until the watchdog looks.
    const alone = [...SET, 'training.steps=1', 'training.maxStaleness=1', 'training.maxInFlight=1'];
    const { victim, fix } = await startWithOneWaiting(run, [...alone, 'training.dialogueWatchSeconds=2']);
    fix();
    await rig!.client.workflow.getHandle(victim).terminate('test: a waiting dialogue closed by hand');
    const handle = rig!.client.workflow.getHandle(trainingWorkflowId(run));
    const counted = await eventually(
      'the watchdog to count it failed',
      async () => {
        const st = await handle.query<TrainingStatus>('trainingStatus');
        return (st.stream?.failed ?? 0) > 0 ? st : undefined;
      },
      120_000,
    );
    assert.equal(counted.rollouts.waiting, undefined, `its wait is over: ${JSON.stringify(counted)}`);
    assert.notEqual(counted.phase, 'waiting-for-operator');
    assert.equal(counted.blockedReason, null);
    assert.equal((await executions(run)).length, 1, 'the same run, before any continue-as-new');
    assert.equal((await handle.result()).stepsApplied, 1);
  });
});
