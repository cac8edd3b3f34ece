import assert from 'node:assert/strict';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import { runMetricsKey, runTranscriptsPrefix } from '../../src/artifacts/keys.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { fetchAdapterManifest } from '../../src/trainer/adapterFiles.js';
import { S3_BUILD_TIMEOUT_MS } from '../support/s3Server.js';
import { assertSameEssentials, essentials } from '../support/runEssentials.js';
import { fakeHostStateSchema } from './fakeHostState.js';
import { until } from './hostProcess.js';
import { polledSince } from './pollers.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { RunEvidence, type RunPosition } from './runEvidence.js';
import { ARTIFACT_FAILURE_TYPES } from '../../src/activities/artifactFailure.js';
import { createNetwork, removeNetwork, setLink } from './network.js';
import {
  QUEUE_PREFIX,
  startCluster,
  startTopology,
  stopCluster,
  STEPS,
  trainFromClient,
  TRAINER_TOKEN,
  urls,
  type Topology,
} from './topology.js';

/** configs/tiny-like: 2 scenarios x 2 samples a step. */
const TRANSCRIPTS_PER_STEP = 4;
const WORKERS_A_DOWN_MS = 60_000;
const S3_AWAY_MS = 30_000;

describe('a run across hosts in network namespaces (Temporal cluster, MinIO, trainer, two vLLM replicas, workers, users)', function () {
  this.timeout(S3_BUILD_TIMEOUT_MS);
  let cluster: { address: string; state: string } | undefined;
  let topology: Topology;
  let savedToken: string | undefined;
  let calm: ReturnType<typeof essentials> | undefined;

  before(async () => {
    savedToken = process.env.TRAINER_TOKEN;
    process.env.TRAINER_TOKEN = TRAINER_TOKEN;
    createNetwork();
    cluster = await startCluster();
    topology = await startTopology(cluster.address);
  });
  after(async () => {
    await topology?.close();
    if (cluster) await stopCluster(cluster.state);
    removeNetwork();
    if (savedToken === undefined) delete process.env.TRAINER_TOKEN;
    else process.env.TRAINER_TOKEN = savedToken;
  });

  async function metrics(run: string): Promise<StepMetricsRecord[]> {
    const text = (await topology.bucket.getText(runMetricsKey(run))) ?? '';
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as StepMetricsRecord);
  }

  /** The trainer's applied step count for the run (0 before its first). */
  async function trainerStep(run: string): Promise<number> {
    const response = await fetch(`${urls.trainer}/v1/runs/${run}`, {
      headers: { authorization: `Bearer ${TRAINER_TOKEN}` },
      signal: AbortSignal.timeout(3000),
    });
    if (response.status === 404) return 0;
    return ((await response.json()) as { step: number }).step;
  }

  /** Each step applied once, every transcript in the bucket, both replicas serving run@STEPS with the trainer's digest. */
  async function assertRunWhole(run: string): Promise<ReturnType<typeof essentials>> {
    assert.equal(await trainerStep(run), STEPS, `the trainer applied exactly ${STEPS} steps`);
    const rows = await metrics(run);
    assert.deepEqual(
      rows.map((m) => m.step),
      [1, 2, 3, 4],
      'one metrics line per step',
    );
    const transcripts = await topology.bucket.list(runTranscriptsPrefix(run));
    assert.equal(transcripts.length, STEPS * TRANSCRIPTS_PER_STEP, transcripts.join(', '));
    const digest = (await fetchAdapterManifest({ url: urls.trainer, tokenEnv: 'TRAINER_TOKEN' }, run, STEPS)).digest;
    for (const replica of ['vllm-1', 'vllm-2'] as const) {
      const state = fakeHostStateSchema.parse(await (await fetch(urls.fakeState(replica))).json());
      const last = state.loads.filter((l) => l.name === `${run}@${STEPS}`).at(-1);
      assert.equal(last?.digest, digest, `${replica} serves ${run}@${STEPS} with the trainer's digest`);
    }
    return essentials(rows);
  }

  async function finished(run: string, train: ReturnType<typeof trainFromClient>): Promise<void> {
    await train.waitForLog(/Metrics: s3:\/\//, 'the run finished');
    await train.kill('SIGTERM');
  }

  it(`an undisturbed ${STEPS}-step GRPO run started by attune train on the client host`, async () => {
    const run = 'mh-calm';
    await finished(run, trainFromClient(topology, run));
    calm = await assertRunWhole(run);
  });

  it('the same run with faults mid-run (workers-a cut off 60 s, workers-b killed, vllm-2 restarted, s3 away 30 s) ends the same, each fault landing in the run and seen by it', async () => {
    assert.ok(calm, 'the undisturbed run ran first');
    const run = 'mh-faults';
    // One activity per LLM call, so that both LLM workers run the run's calls and the kill of workers-b
    // lands in work it is doing: with local turns (the default, which the undisturbed run uses) a step's
    // four rollouts run in whichever worker took their first workflow task, often all in workers-a.
    // Ending the same as the undisturbed run also shows that the two modes train the same.
    const train = trainFromClient(topology, run, ROLLOUT_MODES.perCall);
    const evidence = await RunEvidence.connect(topology.temporalAddress);
    try {
      await faultsLandAndAreSeen(run, train, evidence);
    } finally {
      await evidence.close();
    }
  });

  /** The faults, each one's start and end recorded as the run's step and phase, and what the run did about it. */
  async function faultsLandAndAreSeen(
    run: string,
    train: ReturnType<typeof trainFromClient>,
    evidence: RunEvidence,
  ): Promise<void> {
    const secondsSince = (ms: number) => Math.round((Date.now() - ms) / 100) / 10;
    interface Fault {
      fault: string;
      began: RunPosition;
      ended?: RunPosition;
      recoveredAfter?: number;
    }
    const faults: Fault[] = [];
    const begin = async (fault: string): Promise<Fault> => {
      const entry: Fault = { fault, began: await evidence.position(run, await trainerStep(run)) };
      // A fault that begins after the run is over proves nothing: fail at once, naming it.
      assert.ok(
        entry.began.running && entry.began.applied < STEPS,
        `${fault} began in the run: ${JSON.stringify(entry.began)}`,
      );
      faults.push(entry);
      return entry;
    };
    const end = async (entry: Fault) => {
      entry.ended = await evidence.position(run, await trainerStep(run));
      return Date.now();
    };
    /** From the fault's end to the trainer's next applied step. */
    const recovery = async (entry: Fault, endedAt: number) => {
      const step = await trainerStep(run);
      await until(async () => (await trainerStep(run)) > step, `a step after ${entry.fault}`, 300_000);
      entry.recoveredAfter = secondsSince(endedAt);
    };
    const stepAtLeast = (n: number) => until(async () => (await trainerStep(run)) >= n, `step ${n}`, 300_000);
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    // All four faults start once step 1 is applied (a tiny step takes seconds). With workers-a cut off and
    // workers-b killed no rollout worker is left until workers-b is back; s3 away then holds the next
    // step's transcripts; every later step publishes to the new vllm-2. A worker checks the object store
    // as it starts and exits while it is away: workers-b is back first.
    await stepAtLeast(1);
    const workersAFault = await begin('workers-a link down 60 s');
    setLink('workers-a', 'down');
    const workersACut = sleep(WORKERS_A_DOWN_MS);
    const workersB = topology.process('workers-b', 'llm');
    const vllm2 = topology.process('vllm-2', 'fake');
    const workersBFault = await begin('workers-b SIGKILLed, restarted');
    const workersBBefore = workersB.pid!;
    const vllmFault = await begin('vllm-2 restarted');
    await Promise.all([workersB.restart(), vllm2.restart()]);
    await vllm2.waitForLog(/fake server ready/, 'it listened again');
    const vllmDone = recovery(vllmFault, await end(vllmFault));
    // The run saw the new vllm-2: it published to it again and sampled from it.
    const vllmSeen = until(
      async () => {
        const state = fakeHostStateSchema.parse(await (await fetch(urls.fakeState('vllm-2'))).json());
        return state.loads.length > 0 && state.policyCalls > 0;
      },
      'a publish to and policy calls on the restarted vllm-2',
      300_000,
    ).then(async () => evidence.position(run, await trainerStep(run)));
    await workersB.waitForLog(/"msg":"workers running"/, 'it ran again');
    const workersBDone = recovery(workersBFault, await end(workersBFault));
    const s3Fault = await begin('s3 away (30 s, and until a write failed on it)');
    const watches = topology.processes.map((p) => p.watch(/object store at \S+ is unreachable/));
    const storeFailures = () => watches.reduce((n, count) => n + count(), 0);
    setLink('s3', 'down');
    // Away long enough that the run meets it: a write fails on it (the worker logs the activity's
    // failure) while the link is down, not only a wait that no write noticed.
    await Promise.all([
      sleep(S3_AWAY_MS),
      until(async () => storeFailures() > 0, 'a write failing on the unreachable store', 300_000),
    ]);
    setLink('s3', 'up');
    const s3Done = recovery(s3Fault, await end(s3Fault));
    await workersACut;
    setLink('workers-a', 'up');
    await end(workersAFault);
    // The others carry the run meanwhile: workers-a's recovery is its worker polling again.
    const workersA = topology.process('workers-a', 'llm');
    const linkUpAt = Date.now();
    const workersADone = until(
      () => polledSince(topology.temporalAddress, taskQueuesFor(QUEUE_PREFIX).policy, workersA.pid!, linkUpAt),
      'poll from workers-a after its link came back',
    ).then(() => (workersAFault.recoveredAfter = secondsSince(linkUpAt)));
    await Promise.all([workersBDone, vllmDone, s3Done, workersADone]);
    const vllmSeenAt = await vllmSeen;
    assert.ok(workersA.running, 'the cut-off worker outlived its link');

    // Each fault began while the run was in progress (checked as it began), and each but the 60 s link
    // cut (which the others may outlast) ended in it too: none missed the run.
    for (const f of faults) {
      if (f !== workersAFault)
        assert.ok(
          f.ended?.running && f.ended.applied < STEPS,
          `${f.fault} ended in the run: ${JSON.stringify(f.ended)}`,
        );
    }
    assert.ok(
      vllmSeenAt.running && vllmSeenAt.applied < STEPS,
      `the restarted vllm-2 was used before the run ended: ${JSON.stringify(vllmSeenAt)}`,
    );
    await finished(run, train);
    // The run saw the dead and cut-off workers (attempts that timed out, taken over by others) and the
    // store away (writes retried after the store was unreachable).
    const { workflows, activities, retries, tasksBy } = await evidence.retries(run);
    const ranBy = (pid: number) =>
      [...tasksBy.entries()].filter(([identity]) => identity.startsWith(`${pid}@`)).reduce((n, [, c]) => n + c, 0);
    const seen = (failure: string) => retries.filter((r) => r.lastFailure === failure);
    // Transcript writes fail typed (ArtifactStoreUnreachable); the run's own bookkeeping writes fail
    // with the store's error class (ArtifactStoreUnreachableError): both are the store away.
    const storeAway = retries.filter((r) => r.lastFailure.startsWith(ARTIFACT_FAILURE_TYPES.unreachable));
    const at = (p?: RunPosition) => (p ? `${p.applied} step(s) applied, waiting on ${p.pending}` : '-');
    process.stdout.write(
      `\n${faults
        .map(
          (f) =>
            `      ${f.fault}: began at ${at(f.began)}; ended at ${at(f.ended)}; next step ${f.recoveredAfter} s after`,
        )
        .join(
          '\n',
        )}\n      vllm-2 used again at ${at(vllmSeenAt)}\n      over ${workflows} workflow runs and ${activities} activities: ${
        seen('timeout').length
      } attempt(s) retried after a timeout, ${storeAway.length} after the store was unreachable; tasks (workflow tasks and activities) by worker: workers-b before the kill ${ranBy(workersBBefore)}, after ${ranBy(workersB.pid!)}, workers-a ${ranBy(workersA.pid!)}\n`,
    );
    // The killed worker was part of the run, and its restart took the run's work after it: the run went
    // on through the kill, not around a worker it never used. Workflow tasks count: with local calls (the
    // default) a rollout's LLM calls are local activities inside them. (An attempt the kill cut short shows as a
    // retry after a timeout when the kill finds one in flight; calls to the fake take milliseconds, so
    // it seldom does.)
    const byIdentity = JSON.stringify(Object.fromEntries(tasksBy));
    assert.ok(ranBy(workersBBefore) > 0, `workers-b ran tasks of the run before the kill: ${byIdentity}`);
    assert.ok(ranBy(workersB.pid!) > 0, `the restarted workers-b ran tasks of the run: ${byIdentity}`);
    assert.ok(ranBy(workersA.pid!) > 0, `workers-a ran tasks of the run: ${byIdentity}`);
    assert.ok(storeAway.length > 0, `writes retried after the store was away: ${JSON.stringify(retries)}`);
    assertSameEssentials(await assertRunWhole(run), calm!, 'metrics equal to the undisturbed run of the same seed');
  }
});
