import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { DevServer } from '../../src/temporal/devServer.js';
import {
  bundleWorkflows,
  TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES_ENV,
  WORKFLOWS_PATH,
} from '../../src/workers/workflowSource.js';
import { describeDeployment, setCurrentDeploymentVersion } from '../../src/temporal/workerDeployments.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { startAttune } from '../cli/attuneProcess.js';
import { eventually } from '../support/eventually.js';
import { sharedWorkflowBundle } from '../support/temporalEnv.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { WorkerProcess } from '../support/workerProcess.js';
import { UPGRADE_PROBE_PATCH_ID } from '../fixtures/workflowInterceptors/upgradePatchInterceptor.js';

// Build B's code change: A's code plus a workflow interceptor behind patched(UPGRADE_PROBE_PATCH_ID).
const B_INTERCEPTOR = join(__dirname, '..', 'fixtures', 'workflowInterceptors', 'upgradePatchInterceptor.ts');

const STEPS = 4;
const SET = [...TINY_TRAINING('grpo', STEPS)];
// While `holdCalls` is set every LLM call waits for the fake's release(): the step in flight stays in
// flight until the new build is current, however slowly the operator's command starts on a loaded
// machine (without it, a switch that landed after a continue-as-new missed the mid-run upgrade).
let holdCalls = false;
const BEHAVIOUR = {
  latencyMs: 150,
  analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
  fault: () => (holdCalls ? ('hold' as const) : undefined),
};
const DEPLOYMENT = 'attune';
const { VERSIONING_BEHAVIOR_PINNED: PINNED, VERSIONING_BEHAVIOR_AUTO_UPGRADE: AUTO_UPGRADE } =
  temporal.api.enums.v1.VersioningBehavior;

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

/** Every run of a workflow id (continue-as-new chain), first to last. */
async function historiesOfChain(client: Client, workflowId: string): Promise<History[]> {
  const chain: History[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    chain.unshift(history);
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return chain;
}

/** The build id and versioning behaviour of each completed workflow task, in order. */
function completedTasks(history: History): { buildId: string; behavior: number }[] {
  return (history.events ?? [])
    .map((e) => e.workflowTaskCompletedEventAttributes)
    .filter((a) => a !== null && a !== undefined)
    .map((a) => ({ buildId: a.deploymentVersion?.buildId ?? '', behavior: a.versioningBehavior ?? 0 }));
}

type HistoryEvent = NonNullable<History['events']>[number];

function payloadText(payload: temporal.api.common.v1.IPayload | null | undefined): string {
  return payload?.data ? Buffer.from(payload.data).toString() : '';
}

/** The build id of the workflow task whose commands recorded each event that `recordedBy` names a task for. */
function buildsRecording(history: History, recordedBy: (e: HistoryEvent) => HistoryEvent['eventId']): string[] {
  const builds = new Map<string, string>();
  const found: string[] = [];
  for (const e of history.events ?? []) {
    const completed = e.workflowTaskCompletedEventAttributes;
    if (completed) builds.set(String(e.eventId), completed.deploymentVersion?.buildId ?? '');
    const taskId = recordedBy(e);
    if (taskId !== null && taskId !== undefined) found.push(builds.get(String(taskId)) ?? `task ${String(taskId)}?`);
  }
  return found;
}

/** B's patch marker (core records a patch as a `core_patch` marker holding `{ id, deprecated }`). */
const probeMarkerTask = (e: HistoryEvent) => {
  const marker = e.markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_patch') return undefined;
  const data = JSON.parse(payloadText(marker.details?.['patch-data']?.payloads?.[0]) || '{}') as { id?: string };
  return data.id === UPGRADE_PROBE_PATCH_ID ? marker.workflowTaskCompletedEventId : undefined;
};
/** An activity B's change marked with the patch id as its summary. */
const probeActivityTask = (e: HistoryEvent) =>
  payloadText(e.userMetadata?.summary).includes(UPGRADE_PROBE_PATCH_ID)
    ? e.activityTaskScheduledEventAttributes?.workflowTaskCompletedEventId
    : undefined;

/** Rollouts still running on `buildId`, pinned there: the build has drained when there are none. */
async function pinnedRunning(client: Client, buildId: string): Promise<number> {
  let n = 0;
  for await (const w of client.workflow.list({ query: `WorkflowType = 'rollout' AND ExecutionStatus = 'Running'` })) {
    const info = (await client.workflow.getHandle(w.workflowId, w.runId).describe()).raw.workflowExecutionInfo;
    const versioning = info?.versioningInfo;
    if (versioning?.behavior === PINNED && versioning?.deploymentVersion?.buildId === buildId) n++;
  }
  return n;
}

describe('rolling upgrade with worker versioning (real dev server, real trainer)', function () {
  this.timeout(600_000);
  let server: DevServer | undefined;
  let rig: TrainingRig | undefined;
  const processes: WorkerProcess[] = [];

  after(async () => {
    for (const p of processes) await p.kill();
    await rig?.close();
    await server?.stop();
  });

  it('moves a training run from build A to build B mid-run: each step applied once, B runs the rest, histories replay', async () => {
    server = await DevServer.create({ home: mkdtempSync(join(tmpdir(), 'attune-upgrade-')), headless: true });
    await server.start();
    rig = await createTrainingRig({ server, set: SET, behaviour: BEHAVIOUR });
    const client = rig.client;
    const versioned = (buildId: string, env: NodeJS.ProcessEnv = {}) => {
      const p = WorkerProcess.start(
        server!.address,
        rig!.configSet,
        ['worker', '--role', 'all', '--deployment-version', buildId],
        env,
      );
      processes.push(p);
      return p;
    };
    // Both builds are deployed up front, as a rolling deployment brings B up before it routes to it;
    // a version takes no task until it is current.
    const a = versioned('A');
    const b = versioned('B', { [TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES_ENV]: B_INTERCEPTOR });
    await Promise.all([a.ready(), b.ready()]);
    // The replay bundles of both builds, made while the run waits on its LLM calls.
    const bundles = Promise.all([sharedWorkflowBundle(), bundleWorkflows(WORKFLOWS_PATH, undefined, [B_INTERCEPTOR])]);
    bundles.catch(() => {}); // awaited at the end; a failure surfaces there
    await eventually('build A current', () =>
      setCurrentDeploymentVersion(client, { deploymentName: DEPLOYMENT, buildId: 'A' }, 'test').then(
        () => true,
        () => undefined,
      ),
    );

    const run = 'upgrade';
    const { handle } = await rig.start(run);
    await eventually(
      'step 1 applied',
      async () => ((await rig!.trainer.runState(run)).step >= 1 ? true : undefined),
      300_000,
    );

    holdCalls = true;
    // The operator's command makes B current.
    const setCurrent = await startAttune(
      ['worker', 'deployment', 'set-current', '--build-id', 'B', ...rig.configSet.flatMap((s) => ['--set', s])],
      { TEMPORAL_ADDRESS: server.address },
    ).done;
    assert.equal(setCurrent.code, 0, setCurrent.stderr);
    const state = await describeDeployment(client, DEPLOYMENT);
    assert.equal(state.currentBuildId, 'B');
    assert.ok((await rig.trainer.runState(run)).step < STEPS, 'the switch came before the run ended');
    holdCalls = false;
    rig.fake.release();

    // Drain A (its pinned rollouts finish there), then stop it as a rolling restart would.
    await eventually(
      'build A drained',
      async () => ((await pinnedRunning(client, 'A')) === 0 ? true : undefined),
      300_000,
    );
    await a.kill('SIGTERM');

    assert.equal((await handle.result()).stepsApplied, STEPS);
    assert.equal((await rig.trainer.runState(run)).step, STEPS, 'the trainer applied each step once');
    assert.deepEqual(
      (await rig.metrics(run)).map((m) => m.step),
      [1, 2, 3, 4],
      'one metrics line per step',
    );

    // The training workflow ran on A, then on B only (AUTO_UPGRADE), and its last run ended on B.
    const chain = await historiesOfChain(client, trainingWorkflowId(run));
    const tasks = chain.flatMap(completedTasks);
    const firstB = tasks.findIndex((t) => t.buildId === 'B');
    assert.equal(tasks[0]?.buildId, 'A');
    assert.ok(firstB > 0, `B completed workflow tasks of the run: ${JSON.stringify(tasks.map((t) => t.buildId))}`);
    assert.ok(
      tasks.slice(firstB).every((t) => t.buildId === 'B'),
      'no task went back to A',
    );
    assert.ok(tasks.every((t) => t.behavior === AUTO_UPGRADE));

    // Rollouts were pinned: each ran on one build from start to end, some on A and some on B.
    const rolloutBuilds = new Set<string>();
    for await (const w of client.workflow.list({ query: `WorkflowType = 'rollout'` })) {
      const rolloutTasks = completedTasks(await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory());
      assert.ok(rolloutTasks.every((t) => t.behavior === PINNED && t.buildId === rolloutTasks[0]?.buildId));
      rolloutBuilds.add(rolloutTasks[0]!.buildId);
    }
    assert.deepEqual([...rolloutBuilds].sort(), ['A', 'B']);

    // The operator's view: B current, A no longer (draining until the server's next drainage check).
    const described = await startAttune(
      ['worker', 'deployment', 'describe', '--json', ...rig.configSet.flatMap((s) => ['--set', s])],
      { TEMPORAL_ADDRESS: server.address },
    ).done;
    assert.equal(described.code, 0, described.stderr);
    const view = JSON.parse(described.stdout) as Awaited<ReturnType<typeof describeDeployment>>;
    assert.equal(view.currentBuildId, 'B');
    assert.deepEqual(view.versions.map((v) => [v.buildId, v.current]).sort(), [
      ['A', false],
      ['B', true],
    ]);
    assert.notEqual(view.versions.find((v) => v.buildId === 'A')?.drainage, null);

    // B's code change ran only where B completed the task: the patch marker, once per run at most
    // (the first activity B schedules records it), and the activities it marks; never in A's tasks.
    // The run that A started and B continued took the new path only once B ran it live: replaying
    // A's part on B, patched() was false.
    const markerBuilds = chain.map((h) => buildsRecording(h, probeMarkerTask));
    const probeActivityBuilds = chain.flatMap((h) => buildsRecording(h, probeActivityTask));
    assert.ok(
      markerBuilds.every((builds) => builds.length <= 1 && builds.every((build) => build === 'B')),
      JSON.stringify(markerBuilds),
    );
    assert.ok(
      chain.some((h, i) => completedTasks(h)[0]?.buildId === 'A' && markerBuilds[i]!.length === 1),
      `a run A started recorded B's patch: ${JSON.stringify(markerBuilds)}`,
    );
    assert.ok(
      probeActivityBuilds.length > 0 && probeActivityBuilds.every((build) => build === 'B'),
      JSON.stringify(probeActivityBuilds),
    );

    // Every run of the chain, those A wrote included, replays on B's code.
    const [aBundle, bBundle] = await bundles;
    for (const [i, history] of chain.entries())
      await Worker.runReplayHistory({ workflowBundle: bBundle }, history, `upgrade-training-${i}`);
    // On A's code only the runs without B's marker replay: core fails a non-deprecated patch marker
    // that no patched() call asks for. So once B has run a patched path, going back to A fails
    // those runs (a rollback needs the patched() call kept, or deprecatePatch first).
    for (const [i, history] of chain.entries()) {
      const replay = Worker.runReplayHistory({ workflowBundle: aBundle }, history, `upgrade-training-on-a-${i}`);
      if (markerBuilds[i]!.length === 0) await replay;
      else
        await assert.rejects(
          replay,
          (e: Error) =>
            e.name === 'DeterminismViolationError' &&
            e.message.includes(`patch marker encountered for change ${UPGRADE_PROBE_PATCH_ID}`),
        );
    }
  });
});
