import assert from 'node:assert/strict';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import { runMetricsKey, runTranscriptsPrefix } from '../../src/artifacts/keys.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { fetchAdapterManifest } from '../../src/trainer/adapterFiles.js';
import { S3_BUILD_TIMEOUT_MS } from '../support/s3Server.js';
import { assertSameEssentials, essentials } from '../support/runEssentials.js';
import { fakeHostStateSchema, type FakeHostState } from './fakeHostState.js';
import { until } from './hostProcess.js';
import { polledSince } from './pollers.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { RunEvidence, type RunPosition } from './runEvidence.js';
import { ARTIFACT_FAILURE_TYPES } from '../../src/activities/artifactFailure.js';
import { createNetwork, HOSTS, removeNetwork, setLink, setRoute } from './network.js';
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
/** Each simulated user's answer in the default-mode faults run: dialogues last long enough for a fault to find them running. */
const USERS_LATENCY_MS = 2500;
/**
 * The same while a worker is cut off from the Temporal frontend: longer than the rollouts' workflow-task
 * timeout over a dialogue's remaining calls, so that the cut-off worker's stale attempts are still making
 * calls when another worker takes them over (the fencing's case), and below the LLM calls' 20 s timeout.
 */
const USERS_CUT_LATENCY_MS = 8000;

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
    // The next run has the default mode's faults: it picks its victims from the dialogues each worker holds.
    const train = trainFromClient(topology, run, ROLLOUT_MODES.perCall);
    const evidence = await RunEvidence.connect(topology.temporalAddress);
    try {
      await faultsLandAndAreSeen(run, train, evidence);
    } finally {
      await evidence.close();
    }
  });

  it('the same run in the default mode (local turns) with the worker holding dialogues SIGKILLed, then the one that took them over cut off from Temporal, ends the same and answers no finished call twice', async () => {
    assert.ok(calm, 'the undisturbed run ran first');
    const run = 'mh-local-faults';
    const since = Date.now();
    // The simulated users answer slowly, so that a step's dialogues are running when the faults come.
    await fetch(urls.fakeLatency('users', USERS_LATENCY_MS), { method: 'POST' });
    const train = trainFromClient(topology, run, ROLLOUT_MODES.localTurn);
    const evidence = await RunEvidence.connect(topology.temporalAddress);
    try {
      await localFaultsLand(run, train, evidence, since);
    } finally {
      await fetch(urls.fakeLatency('users', 0), { method: 'POST' });
      await evidence.close();
    }
  });

  /**
   * The default mode's faults, each landing in dialogues a worker holds (the server's view: the identity
   * that started a running rollout's last workflow task). First the worker holding dialogues (X) is
   * SIGKILLed and stays dead until the other (Y) has taken its dialogues over, when their workflow tasks
   * timed out: so Y holds dialogues too, whatever way the first workflow tasks went. Then Y is cut off
   * from the Temporal frontend alone (it still reaches the LLM hosts and S3: its local turns go on,
   * stale, fenced by the turn journal's conditional writes) and X is restarted, the only worker the
   * server can reach: it takes Y's dialogues over after their workflow-task timeout. Y's route comes back
   * once it holds none.
   */
  async function localFaultsLand(
    run: string,
    train: ReturnType<typeof trainFromClient>,
    evidence: RunEvidence,
    since: number,
  ): Promise<void> {
    const pidOf = (identity: string) => Number(identity.slice(0, identity.indexOf('@')));
    const heldBy = (holders: Map<string, string>, pid: number) =>
      [...holders.entries()].filter(([, identity]) => pidOf(identity) === pid).map(([id]) => id);
    const lines: string[] = [];
    const note = async (line: string) => {
      const p = await evidence.position(run, await trainerStep(run));
      lines.push(
        `${line} at ${Math.round((Date.now() - since) / 1000)} s: ${p.applied} step(s) applied, waiting on ${p.pending}`,
      );
    };

    await until(async () => (await trainerStep(run)) >= 1, 'step 1', 300_000);
    // X: a worker holding running dialogues (workers-b when both do).
    let holders = new Map<string, string>();
    await until(
      async () => {
        holders = await evidence.rolloutHolders(run);
        return holders.size > 0;
      },
      'running rollouts held by a worker',
      300_000,
    );
    const pids = (['workers-a', 'workers-b'] as const).map((h) => topology.process(h, 'llm').pid!);
    const xName = heldBy(holders, pids[1]!).length > 0 ? 'workers-b' : 'workers-a';
    const yName = xName === 'workers-a' ? 'workers-b' : 'workers-a';
    const x = topology.process(xName, 'llm');
    const y = topology.process(yName, 'llm');
    const xBefore = x.pid!;
    const killed = heldBy(holders, xBefore);
    assert.ok(killed.length > 0, `${xName} holds dialogues: ${JSON.stringify([...holders])}`);
    const killedAt = Date.now();
    await x.kill('SIGKILL');
    await note(`${xName} SIGKILLed holding ${killed.length} of ${holders.size} running dialogue(s)`);
    // Y takes them over once their workflow tasks time out (or they ended meanwhile, which they cannot
    // without a worker completing their tasks: Y).
    await until(
      async () => {
        for (const id of killed) {
          const held = await evidence.holderOf(id);
          if (held.running && (held.identity === null || pidOf(held.identity) !== y.pid)) return false;
        }
        return true;
      },
      `${yName} taking over the dialogues of the killed ${xName}`,
      300_000,
    );
    await note(`${yName} took over the ${killed.length} dialogue(s) ${xName} held`);
    // Y now holds dialogues (the ones it took over, or the next ones: it is the only worker).
    await until(
      async () => {
        holders = await evidence.rolloutHolders(run);
        return heldBy(holders, y.pid!).length > 0;
      },
      `running rollouts held by ${yName}`,
      300_000,
    );
    const cut = heldBy(holders, y.pid!);
    await fetch(urls.fakeLatency('users', USERS_CUT_LATENCY_MS), { method: 'POST' });
    const cutAt = Date.now();
    setRoute(yName, 'temporal', 'down');
    try {
      await note(`${yName} cut off from the Temporal frontend holding ${cut.length} of ${holders.size} dialogue(s)`);
      x.start();
      await x.waitForLog(/"msg":"workers running"/, 'it ran again');
      await note(`${xName} restarted`);
      await until(
        async () => {
          for (const id of cut) {
            const held = await evidence.holderOf(id);
            if (held.running && (held.identity === null || pidOf(held.identity) !== x.pid)) return false;
          }
          return true;
        },
        `${xName} taking over the dialogues of the cut-off ${yName}`,
        300_000,
      );
      await note(`${xName} took over the ${cut.length} dialogue(s) ${yName} held`);
      await fetch(urls.fakeLatency('users', USERS_LATENCY_MS), { method: 'POST' });
    } finally {
      setRoute(yName, 'temporal', 'up');
    }
    const healedAt = Date.now();
    await note(`${yName}'s route to the Temporal frontend back`);
    const faultsEnded = await evidence.position(run, await trainerStep(run));
    assert.ok(
      faultsEnded.running && faultsEnded.applied < STEPS,
      `the faults ended inside the run: ${JSON.stringify(faultsEnded)}`,
    );
    await finished(run, train);
    assert.ok(y.running, `the cut-off ${yName} outlived its partition`);

    const { tasksBy } = await evidence.retries(run);
    const ranBy = (pid: number) =>
      [...tasksBy.entries()].filter(([identity]) => identity.startsWith(`${pid}@`)).reduce((n, [, c]) => n + c, 0);
    const byIdentity = JSON.stringify(Object.fromEntries(tasksBy));
    // No finished call answered twice, counted as the chaos soak does (bench/chaos/calls.ts). A call is
    // answered when the fakes answered its request (same role, messages and seed) with 200 to a connected
    // client, in this run. Answers to a victim inside its fault window are not counted: X's answered at
    // most 2 s before its kill (a call it had finished but not yet journalled: the taking over worker makes
    // it again), and Y's from its cut until 5 s after its route came back (its attempts were stale: what
    // they journal is fenced once another worker has taken the dialogue over). A finished call answered
    // twice is a request answered more than once outside these windows: the worker holding the dialogue
    // made again a call the journal had.
    const states: FakeHostState[] = await Promise.all(
      (['vllm-1', 'vllm-2', 'users'] as const).map(async (h) =>
        fakeHostStateSchema.parse(await (await fetch(urls.fakeState(h))).json()),
      ),
    );
    const answered = states.flatMap((s) => s.answered).filter((a) => a.atMs >= since && a.delivered);
    const byFingerprint = new Map<string, typeof answered>();
    for (const a of answered) byFingerprint.set(a.fingerprint, [...(byFingerprint.get(a.fingerprint) ?? []), a]);
    const inFaultWindow = (a: (typeof answered)[number]) =>
      (a.from === HOSTS[xName] && a.atMs >= killedAt - 2000 && a.atMs <= killedAt + 1000) ||
      (a.from === HOSTS[yName] && a.atMs >= cutAt && a.atMs <= healedAt + 5000);
    const copies = [...byFingerprint.values()];
    const madeAgain = copies.filter((as) => as.length > 1);
    const answeredTwice = copies.filter((as) => as.filter((a) => !inFaultWindow(a)).length > 1);
    // What the cut-off worker's local turns did while it reached the LLM hosts but not the frontend, and
    // how many of its calls there went on with what the worker that took the dialogue over had asked already
    // (superseded: wasted, their answers fenced; reported, not asserted).
    const toYCut = answered.filter((a) => a.from === HOSTS[yName] && a.atMs >= cutAt && a.atMs <= healedAt);
    const superseded = toYCut.filter((a) =>
      byFingerprint.get(a.fingerprint)!.some((b) => b.from !== HOSTS[yName] && b.atMs < a.atMs),
    ).length;
    process.stdout.write(
      `\n${lines.map((l) => `      ${l}`).join('\n')}\n      ${answered.length} call(s) answered in the run, ${
        madeAgain.length
      } answered more than once (a victim's in a fault window and the worker's that took over), ${
        answeredTwice.length
      } finished call(s) answered twice; ${toYCut.length} answered to ${yName} while cut off, ${superseded} of them superseded; tasks by worker: ${xName} before the kill ${ranBy(
        xBefore,
      )}, after ${ranBy(x.pid!)}, ${yName} ${ranBy(y.pid!)}\n`,
    );
    assert.deepEqual(answeredTwice, [], 'no finished call answered twice');
    assert.ok(ranBy(xBefore) > 0, `${xName} ran tasks of the run before the kill: ${byIdentity}`);
    assert.ok(ranBy(x.pid!) > 0, `the restarted ${xName} ran tasks of the run: ${byIdentity}`);
    assert.ok(ranBy(y.pid!) > 0, `${yName} ran tasks of the run: ${byIdentity}`);
    assertSameEssentials(await assertRunWhole(run), calm!, 'metrics equal to the undisturbed run of the same seed');
  }

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
