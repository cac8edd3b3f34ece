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

  it('the same run with faults mid-run (workers-a cut off 60 s, workers-b killed, vllm-2 restarted, s3 away 30 s) ends the same', async () => {
    assert.ok(calm, 'the undisturbed run ran first');
    const run = 'mh-faults';
    const train = trainFromClient(topology, run);
    const secondsSince = (ms: number) => Math.round((Date.now() - ms) / 100) / 10;
    const recovered: { fault: string; seconds: number | null }[] = [];
    /** From the fault's end to the trainer's next applied step (null: the others carried the run to its end meanwhile). */
    const recovery = async (fault: string, endedAt: number) => {
      const step = await trainerStep(run);
      if (step < STEPS) await until(async () => (await trainerStep(run)) > step, `a step after ${fault}`, 300_000);
      recovered.push({ fault, seconds: step < STEPS ? secondsSince(endedAt) : null });
    };
    const stepAtLeast = (n: number) => until(async () => (await trainerStep(run)) >= n, `step ${n}`, 300_000);
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    // All four faults start once step 1 is applied (a tiny step takes seconds: each must land before the
    // run ends). With workers-a cut off and workers-b killed no rollout worker is left until workers-b is
    // back; s3 away then holds the next step's transcripts; every later step publishes to the new vllm-2.
    // A worker checks the object store as it starts and exits while it is away: workers-b is back first.
    await stepAtLeast(1);
    const step = await trainerStep(run);
    setLink('workers-a', 'down');
    const workersACut = sleep(WORKERS_A_DOWN_MS);
    const workersB = topology.process('workers-b', 'llm');
    const vllm2 = topology.process('vllm-2', 'fake');
    await Promise.all([workersB.restart(), vllm2.restart()]);
    await vllm2.waitForLog(/fake server ready/, 'it listened again');
    const vllmDone = recovery('vllm-2 restarted', Date.now());
    await workersB.waitForLog(/"msg":"workers running"/, 'it ran again');
    const workersBDone = recovery('workers-b SIGKILLed, restarted', Date.now());
    setLink('s3', 'down');
    await sleep(S3_AWAY_MS);
    setLink('s3', 'up');
    const s3Done = recovery('s3 away 30 s', Date.now());
    await workersACut;
    setLink('workers-a', 'up');
    // The others carry the run meanwhile: workers-a's recovery is its worker polling again.
    const workersA = topology.process('workers-a', 'llm');
    const linkUpAt = Date.now();
    const workersADone = until(
      () => polledSince(topology.temporalAddress, taskQueuesFor(QUEUE_PREFIX).policy, workersA.pid!, linkUpAt),
      'poll from workers-a after its link came back',
    ).then(() => recovered.push({ fault: 'workers-a link down 60 s (polls again)', seconds: secondsSince(linkUpAt) }));
    await Promise.all([workersBDone, vllmDone, s3Done, workersADone]);
    assert.ok(step < STEPS, `the faults landed before the run ended (step ${step})`);
    assert.ok(workersA.running, 'the cut-off worker outlived its link');

    await finished(run, train);
    assertSameEssentials(await assertRunWhole(run), calm, 'metrics equal to the undisturbed run of the same seed');
    process.stdout.write(
      `\n      fault                                     recovered after (s)\n${recovered
        .map((r) => `      ${r.fault.padEnd(42)}${r.seconds ?? 'run ended meanwhile'}`)
        .join('\n')}\n`,
    );
  });
});
