import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import type { Transcript } from '../../src/core/transcript.js';
import { scenariosForStep } from '../../src/core/training/scenarioSchedule.js';
import type { TrainingStatus } from '../../src/workflows/training.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { assertSameEssentials, essentials, trainerLedger, type RunEssentials } from '../support/runEssentials.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { WorkerProcess } from '../support/workerProcess.js';

const STEPS = 4;
const PIPELINED = [
  ...TINY_TRAINING('grpo', STEPS),
  'training.maxStaleness=1',
  'training.trainer.heartbeatTimeoutMs=3000',
];
// Simulator answers depend only on the request, so every run of the same seed sees the same dialogues.
const BEHAVIOUR = { analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }) };
/** 2 scenarios x 2 samples x 2 turns: the analysis calls of one step. */
const ANALYSES_PER_STEP = 8;

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

/** Per run of the workflow: the step it trained, the steps its rollout children belong to, and whether
 * the next step's scenarios were listed before the optimizer step finished. */
async function runsOf(rig: TrainingRig, run: string) {
  const workflowId = trainingWorkflowId(run);
  const runs: { trained: number | null; rolledOut: number[]; overlapped: boolean }[] = [];
  let runId: string | undefined = (await rig.client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history: History = await rig.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    const scheduled = (name: string) =>
      events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === name);
    const optimizer = scheduled('applyOptimizerStep');
    const listing = scheduled('listScenarioIds');
    const optimizerDone = optimizer
      ? events.find(
          (e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(optimizer.eventId),
        )
      : undefined;
    const rolledOut = new Set<number>();
    for (const e of events) {
      const id = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
      const step = id ? /--s(\d+)--/.exec(id)?.[1] : undefined;
      if (step) rolledOut.add(Number(step));
    }
    runs.unshift({
      trained: optimizer ? runs.length : null,
      rolledOut: [...rolledOut],
      overlapped:
        optimizer !== undefined &&
        listing !== undefined &&
        optimizerDone !== undefined &&
        Number(listing.eventId) < Number(optimizerDone.eventId),
    });
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return runs;
}

describe('training with maxStaleness 1: rollouts of the next step overlap the optimizer step (real dev server, real trainer)', function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;
  let processes: WorkerProcess[] = [];
  let baseline: RunEssentials;
  let baselineLedger: Awaited<ReturnType<typeof trainerLedger>>;

  afterEach(async () => {
    for (const p of processes) await p.kill();
    processes = [];
    await rig?.close();
    rig = undefined;
  });

  it('applies each step once, samples one version behind, and lists the next step while the optimizer works', async () => {
    rig = await createTrainingRig({ set: PIPELINED, behaviour: BEHAVIOUR });
    await rig.startWorkers();
    const run = 'pipe-e2e';
    const { handle } = await rig.start(run);
    const result = await handle.result();
    assert.equal(result.stepsApplied, STEPS);
    assert.equal(result.version, `${run}@${STEPS}`);
    assert.equal((await rig.trainer.runState(run)).step, STEPS, 'the trainer applied exactly 4 steps');

    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.map((m) => m.step),
      [1, 2, 3, 4],
    );
    assert.deepEqual(
      metrics.map((m) => m.policyVersion),
      [`${run}@0`, `${run}@0`, `${run}@1`, `${run}@2`],
      'step n samples the weights of step n-2 (the base model for the first two)',
    );
    for (const m of metrics) {
      assert.equal(m.rollouts.ok, 4);
      const stale = m.step === 1 ? '0' : '1';
      assert.deepEqual(Object.keys(m.trainer.staleness_histogram ?? {}), [stale], `step ${m.step}`);
    }
    baseline = essentials(metrics);
    baselineLedger = await trainerLedger(rig.trainer.stateDir, run);
    assert.deepEqual(
      baselineLedger.map((l) => l.step),
      [1, 2, 3, 4],
      'the ledger holds each step once',
    );
    assert.ok(
      baselineLedger.every((l) => l.samples.length >= 4),
      'each step trained on its 4 dialogues',
    );

    // The same scenarios per step as without the overlap, each dialogue once.
    const transcripts = await rig.store.list(`rollouts/${run}`);
    assert.equal(transcripts.length, STEPS * 4);
    const ids = ['test-not-my-fault-avoidant-cyclist', 'test-venting-negative-baker'];
    for (let step = 1; step <= STEPS; step++) {
      const seen: string[] = [];
      for (const key of transcripts) {
        const t = await rig.store.getJson<Transcript>(key);
        if (t.step === step) seen.push(t.scenario.id);
      }
      assert.deepEqual([...new Set(seen)].sort(), scenariosForStep(ids, 7, step, 2).ids.sort());
      assert.equal(seen.length, 4);
    }

    // Runs: rollouts of 1; train 1 + rollouts of 2; ...; train 4 alone.
    const runs = await runsOf(rig, run);
    assert.deepEqual(
      runs.map((r) => r.rolledOut),
      [[1], [2], [3], [4], []],
    );
    assert.deepEqual(
      runs.map((r) => r.trained !== null),
      [false, true, true, true, true],
    );
    for (const r of runs.slice(1, STEPS))
      assert.ok(r.overlapped, "the next step's rollouts began before the optimizer step ended");
  });

  it('SIGKILLs of the LLM-I/O and optimizer workers change nothing: the same metrics as undisturbed', async () => {
    assert.ok(baseline, 'the undisturbed run above ran first');
    rig = await createTrainingRig({ set: PIPELINED, behaviour: BEHAVIOUR });
    const spawn = (role: 'llm' | 'optimizer') => {
      const p = WorkerProcess.start(rig!.address, rig!.configSet, ['worker', '--role', role]);
      processes.push(p);
      return p;
    };
    const llm = spawn('llm');
    const optimizer = spawn('optimizer');
    await Promise.all([llm.ready(), optimizer.ready()]);
    const run = 'pipe-kill';
    const { handle } = await rig.start(run);
    // Past step 1's dialogues: step 2's run while the optimizer trains step 1.
    await rig.fake.waitForCall('analysis', ANALYSES_PER_STEP + 3);
    await llm.kill('SIGKILL');
    await optimizer.kill('SIGKILL');
    await Promise.all([spawn('llm').ready(), spawn('optimizer').ready()]);
    assert.equal((await handle.result()).stepsApplied, STEPS);
    assert.equal((await rig.trainer.runState(run)).step, STEPS);
    assertSameEssentials(essentials(await rig.metrics(run)), baseline);
    assert.deepEqual(
      await trainerLedger(rig.trainer.stateDir, run),
      baselineLedger,
      'the same samples, each step once',
    );
  });

  it('a trainer SIGKILLed inside a step while the next step rolls out, then restarted: the same metrics', async () => {
    assert.ok(baseline, 'the undisturbed run above ran first');
    // Slows each optimizer step before its commit, so the kill lands inside step 2.
    rig = await createTrainingRig({
      // The next step's dialogues sample from this trainer while it restarts: their policy calls retry
      // until it answers again (a restart is an outage retries cover, not one to wait out; the suite's
      // 50-200 ms retries give up within about a second, before a loaded machine has restarted it).
      set: [...PIPELINED, 'policy.retry.maximumAttempts=0', 'policy.retry.maximumIntervalMs=1000'],
      behaviour: BEHAVIOUR,
      trainerEnv: { ATTUNE_TRAINER_FAULT_DELAY_S: '2' },
    });
    await rig.startWorkers();
    const run = 'pipe-trainer';
    const { handle } = await rig.start(run);
    await rig.trainer.waitForLog(/fault delay before commit.*"step": 2/);
    await rig.trainer.restart();
    assert.equal((await handle.result()).stepsApplied, STEPS);
    assert.equal((await rig.trainer.runState(run)).step, STEPS);
    assertSameEssentials(essentials(await rig.metrics(run)), baseline);
    assert.deepEqual(
      await trainerLedger(rig.trainer.stateDir, run),
      baselineLedger,
      'the same samples, each step once',
    );
  });

  it('stop while the next step rolls out: its dialogues finish and are trained, none half counted', async () => {
    rig = await createTrainingRig({ set: PIPELINED, behaviour: BEHAVIOUR });
    await rig.startWorkers();
    const run = 'pipe-stop';
    const { handle } = await rig.start(run);
    await rig.fake.waitForCall('analysis', ANALYSES_PER_STEP + 1);
    const status = await handle.executeUpdate<TrainingStatus, []>('stop');
    assert.equal(status.stopRequested, true);
    const result = await handle.result();
    assert.equal(result.stopped, true);
    assert.equal(result.stepsApplied, 2, 'step 2, rolled out when the stop came, is trained too');
    assert.equal((await rig.trainer.runState(run)).step, 2);
    assert.deepEqual(
      (await rig.metrics(run)).map((m) => [m.step, m.rollouts.ok]),
      [
        [1, 4],
        [2, 4],
      ],
    );
    assert.equal((await rig.store.list(`rollouts/${run}`)).length, 8, 'no dialogue of step 3 started');
  });
});
