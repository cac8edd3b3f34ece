import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../../src/config/load.js';
import type { Transcript } from '../../src/core/transcript.js';
import { fetchAdapterManifest } from '../../src/trainer/adapterFiles.js';
import { createPublisherWorker } from '../../src/workers/publisherWorker.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { RunningWorkers } from '../support/runningWorkers.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { assertTurnsNameTheirVersion } from '../vllm/fullWeightsSupport.js';

const TOKEN = 'publish-full-replicas-token-0123456789';

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

describe('full fine-tuning published to vLLM replicas through their publisher workers (real dev server, real trainer, two fake vLLMs)', function () {
  this.timeout(600_000);
  let rig: TrainingRig;
  let replicaB: FakeOpenAIServer;
  let connection: NativeConnection;
  const publishers = [new RunningWorkers(), new RunningWorkers()];
  const adapterDirs = {
    a: mkdtempSync(join(tmpdir(), 'attune-full-replica-a-')),
    b: mkdtempSync(join(tmpdir(), 'attune-full-replica-b-')),
  };
  /** Set by a test: replica b restarts (back on its launch weights) inside its first policy call on this version. */
  let restartBOn: string | null = null;
  /** How many of b's RL-route calls came before its restart. */
  let callsBeforeRestart = -1;
  let savedToken: string | undefined;

  before(async () => {
    savedToken = process.env.TRAINER_TOKEN;
    process.env.TRAINER_TOKEN = TOKEN;
    replicaB = await FakeOpenAIServer.start({
      fault: ({ role }) => {
        if (role === 'policy' && restartBOn !== null && replicaB.fullWeights.version === restartBOn) {
          restartBOn = null;
          callsBeforeRestart = replicaB.fullWeights.calls.length;
          replicaB.fullWeights.restart();
        }
        return undefined;
      },
    });
    rig = await createTrainingRig({
      trainerEnv: { TRAINER_TOKEN: TOKEN },
      set: [...TINY_TRAINING('grpo', 2), 'training.publish.mode=vllm', 'training.publish.publisherWaitMs=3000'],
    });
    rig.configSet.push(
      `policy.replicas=[{"name": "a", "baseURL": "${rig.fake.url}"}, {"name": "b", "baseURL": "${replicaB.url}"}]`,
    );
    rig.config = loadConfig({ env: {}, set: rig.configSet });
    await rig.startWorkers();
    connection = await NativeConnection.connect({ address: rig.address });
    for (const [i, replica] of (['a', 'b'] as const).entries())
      publishers[i]!.start([
        await createPublisherWorker({
          connection,
          namespace: 'default',
          config: rig.config,
          store: rig.store,
          replica,
          adapterDir: adapterDirs[replica],
        }),
      ]);
  });
  after(async () => {
    for (const publisher of publishers) await publisher.stop();
    await rig?.close();
    await replicaB?.close();
    await connection?.close();
    if (savedToken === undefined) delete process.env.TRAINER_TOKEN;
    else process.env.TRAINER_TOKEN = savedToken;
  });

  const replicas = () =>
    [
      ['a', rig.fake],
      ['b', replicaB],
    ] as const;
  const labels = (fake: FakeOpenAIServer, run: string) =>
    fake.fullWeights.calls
      .filter((c) => c.route === '/update_weight_version' && JSON.stringify(c.body).includes(`${run}@`))
      .map((c) => (c.body as { new_version: string }).new_version);
  const reloads = (fake: FakeOpenAIServer) =>
    fake.fullWeights.calls
      .filter((c) => c.route === '/collective_rpc')
      .map((c) => (c.body as { kwargs: { weights_path: string } }).kwargs.weights_path);

  it("each replica reloads step 0 before step 1, then every step, from its own download of the trainer's files; turns name run@k-1", async () => {
    const run = 'full-replicas';
    const { handle } = await rig.start(run, rig.config);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 2);
    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.map((m) => [m.step, m.policyVersion, m.rollouts.failed]),
      [
        [1, `${run}@0`, 0],
        [2, `${run}@1`, 0],
      ],
    );
    assert.ok(metrics.every((m) => typeof m.publishLatencyMs === 'number'));
    await assertTurnsNameTheirVersion(rig.store, run, 2);
    const manifest = await fetchAdapterManifest({ url: rig.trainer.url, tokenEnv: 'TRAINER_TOKEN' }, run, 2, 'weights');
    for (const [name, fake] of replicas()) {
      // Step 0 before step 1 samples (vLLM starts on its launch weights), then each step once: the check
      // before step 2 found run@1 served and reloaded nothing.
      assert.deepEqual(
        labels(fake, run),
        [0, 1, 2].flatMap((k) => [`loading ${run}@${k}`, `${run}@${k}`]),
        name,
      );
      const paths = reloads(fake).slice(-3);
      for (const [k, path] of paths.entries()) {
        assert.ok(path.startsWith(join(adapterDirs[name], run, `weights-step-${k}-`)), `${name} reloaded ${path}`);
        assert.ok(!path.includes(rig.trainer.stateDir), "not the trainer's own path");
      }
      // The newest two steps stay on the replica's disk, byte for byte the trainer's files; step 0 is gone.
      assert.deepEqual(
        readdirSync(join(adapterDirs[name], run))
          .map((d) => d.replace(/-[0-9a-f]{16}$/, ''))
          .sort(),
        ['weights-step-1', 'weights-step-2'],
      );
      assert.ok(!existsSync(paths[0]!));
      for (const file of manifest.files) assert.equal(sha256(join(paths[2]!, file.name)), file.sha256, file.name);
      assert.ok(
        fake.calls.some((c) => c.role === 'policy' && c.status === 200),
        `replica ${name} sampled`,
      );
    }
  });

  it('a replica restarted on its launch weights mid-step: its calls go to the other replica, no turn records weights it was not sampled from, and the next publish reloads it', async () => {
    const run = 'full-restart';
    restartBOn = `${run}@1`;
    const policyCallsBefore = rig.fake.calls.filter((c) => c.role === 'policy').length;
    const { handle } = await rig.start(run, rig.config);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 2);
    assert.equal(restartBOn, null, 'replica b restarted during step 2');
    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.map((m) => [m.step, m.rollouts.failed]),
      [
        [1, 0],
        [2, 0],
      ],
    );
    await assertTurnsNameTheirVersion(rig.store, run, 2);
    // b found its launch weights at a call's check, and served no later call of step 2 ...
    const afterRestart = replicaB.fullWeights.calls.slice(callsBeforeRestart);
    const firstReload = afterRestart.findIndex((c) => c.route.startsWith('/pause')); // routes keep their query
    const checks = afterRestart.slice(0, firstReload).filter((c) => c.route === '/weight_info');
    assert.ok(checks.length > 0, 'a call checked replica b after its restart');
    assert.ok(
      checks.every((c) => c.version === 'default'),
      'until step 2 was published, b stayed on its launch weights',
    );
    // ... while replica a took them over, and step 2's publish brought b to run@2.
    assert.ok(rig.fake.calls.filter((c) => c.role === 'policy').length > policyCallsBefore);
    assert.equal(replicaB.fullWeights.version, `${run}@2`);
    assert.deepEqual(labels(replicaB, run).slice(-2), [`loading ${run}@2`, `${run}@2`]);
  });

  it('overlapping steps (maxStaleness 1: planned, first finished, and first finished with replicas updated in turn): both replicas load the base version before the first call, the run finishes, each turn names a version a replica served within the bound, and in turn each step reloads one replica', async () => {
    const firstFinished = ['training.stepDialogues=firstFinished', 'training.maxInFlight=4'];
    for (const [tag, gather] of [
      ['', []],
      ['-ff', firstFinished],
      ['-in-turn', [...firstFinished, 'training.publish.replicaUpdates=inTurn']],
    ] as const) {
      const run = `full-overlap${tag}`;
      const config = loadConfig({ env: {}, set: [...rig.configSet, 'training.maxStaleness=1', ...gather] });
      const { handle } = await rig.start(run, config);
      // Before the fix the replicas stayed on their launch weights and every call waited for a publisher.
      let deadline: NodeJS.Timeout | undefined;
      const result = await Promise.race([
        handle.result(),
        new Promise<never>((_, reject) => {
          deadline = setTimeout(
            () =>
              reject(new Error(`${run} did not finish in 240 s: its calls wait on replicas serving no version of it`)),
            240_000,
          );
        }),
      ]).finally(() => clearTimeout(deadline));
      assert.equal(result.stepsApplied, 2, run);
      const loaded = new Set<string>();
      for (const [name, fake] of replicas()) {
        const runLabels = labels(fake, run);
        assert.deepEqual(runLabels.slice(0, 2), [`loading ${run}@0`, `${run}@0`], `${name} loads the base first`);
        if (tag === '-in-turn') {
          // step 1 to b (1 mod 2), step 2 to a: one reload a step, the other replica serving meanwhile
          const own = name === 'a' ? 2 : 1;
          assert.deepEqual(runLabels.slice(2), [`loading ${run}@${own}`, `${run}@${own}`], `${name}'s turn`);
          // Its label says `loading` before the pause drains it, so calls go to the other replica meanwhile.
          const routes = fake.fullWeights.calls.map((c) => c.route);
          const labelled = fake.fullWeights.calls.findIndex(
            (c) => c.route === '/update_weight_version' && JSON.stringify(c.body).includes(`loading ${run}@${own}`),
          );
          assert.equal(routes.indexOf('/pause?mode=wait', labelled), labelled + 1, `${name}: labelled, then paused`);
        }
        for (const label of runLabels) if (!label.startsWith('loading')) loaded.add(label);
      }
      for (const key of await rig.store.list(`rollouts/${run}`)) {
        const transcript = (await rig.store.getJson<Transcript>(key))!;
        for (const turn of transcript.turns) {
          const version = turn.policy.weightVersion ?? '';
          assert.ok(loaded.has(version), `${key} turn ${turn.turn}: ${version} was served by a replica`);
          const age = transcript.step! - 1 - Number(version.slice(version.lastIndexOf('@') + 1));
          assert.ok(
            age >= 0 && age <= 1,
            `${key} turn ${turn.turn}: ${version} within maxStaleness 1 of step ${transcript.step}`,
          );
        }
      }
    }
  });
});
