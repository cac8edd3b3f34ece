import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../../src/config/load.js';
import { fetchAdapterManifest, ADAPTER_RECORD, type AdapterManifest } from '../../src/trainer/adapterFiles.js';
import { createPublisherWorker } from '../../src/workers/publisherWorker.js';
import type { TrainingStatus } from '../../src/workflows/training.js';
import { attune } from '../cli/attuneProcess.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { RunningWorkers } from '../support/runningWorkers.js';
import { statusWhen } from '../support/statusWhen.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

const TOKEN = 'publish-replicas-token-0123456789';
const TRAINER = { tokenEnv: 'TRAINER_TOKEN' };

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** The adapter files a replica's vLLM was told to load: the trainer's files, byte for byte, readable by others. */
function assertHoldsAdapter(dir: string, manifest: AdapterManifest): void {
  assert.equal(statSync(dir).mode & 0o777, 0o755, `${dir} mode`);
  for (const file of manifest.files) {
    const path = join(dir, file.name);
    assert.equal(sha256(path), file.sha256, path);
    assert.equal(statSync(path).mode & 0o777, 0o644, `${path} mode`);
  }
  const record = JSON.parse(readFileSync(join(dir, ADAPTER_RECORD), 'utf8')) as { digest: string };
  assert.equal(record.digest, manifest.digest);
}

describe('publishing to vLLM replicas through their publisher workers (real dev server, real trainer, two fake vLLMs)', function () {
  this.timeout(600_000);
  let rig: TrainingRig;
  let replicaB: FakeOpenAIServer;
  let connection: NativeConnection;
  const publishers = { a: new RunningWorkers(), b: new RunningWorkers() };
  const adapterDirs = {
    a: mkdtempSync(join(tmpdir(), 'attune-replica-a-')),
    b: mkdtempSync(join(tmpdir(), 'attune-replica-b-')),
  };
  let savedToken: string | undefined;

  before(async () => {
    savedToken = process.env.TRAINER_TOKEN;
    process.env.TRAINER_TOKEN = TOKEN;
    replicaB = await FakeOpenAIServer.start();
    rig = await createTrainingRig({
      trainerEnv: { TRAINER_TOKEN: TOKEN },
      set: [
        ...TINY_TRAINING('grpo', 2),
        'training.publish.mode=vllm',
        'training.lora.r=8',
        'training.publish.publisherWaitMs=3000',
      ],
    });
    // Replica a is the rig's fake (also the simulator), known once the rig runs; replica b a second fake vLLM.
    rig.configSet.push(
      `policy.replicas=[{"name": "a", "baseURL": "${rig.fake.url}"}, {"name": "b", "baseURL": "${replicaB.url}"}]`,
    );
    rig.config = loadConfig({ env: {}, set: rig.configSet });
    await rig.startWorkers();
    connection = await NativeConnection.connect({ address: rig.address });
  });
  after(async () => {
    await publishers.a.stop();
    await publishers.b.stop();
    await rig?.close();
    await replicaB?.close();
    await connection?.close();
    if (savedToken === undefined) delete process.env.TRAINER_TOKEN;
    else process.env.TRAINER_TOKEN = savedToken;
  });

  async function startPublisher(name: 'a' | 'b'): Promise<void> {
    publishers[name].start([
      await createPublisherWorker({
        connection,
        namespace: 'default',
        config: rig.config,
        store: rig.store,
        replica: name,
        adapterDir: adapterDirs[name],
      }),
    ]);
  }

  const trainer = () => ({ url: rig.trainer.url, ...TRAINER });
  const loadsOf = (fake: FakeOpenAIServer, run: string) =>
    fake.lora.loads.filter((l) => l.name.startsWith(`${run}@`)).map((l) => [l.name, l.status]);

  it("each step lands on both replicas with the trainer's digest, and the policy calls spread over both", async () => {
    await startPublisher('a');
    await startPublisher('b');
    const run = 'replicas';
    const { handle } = await rig.start(run, rig.config);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 2);
    assert.equal(result.version, `${run}@2`);
    for (const fake of [rig.fake, replicaB])
      assert.deepEqual(loadsOf(fake, run), [
        [`${run}@1`, 200],
        [`${run}@2`, 200],
      ]);
    for (const step of [1, 2]) {
      const manifest = await fetchAdapterManifest(trainer(), run, step);
      for (const [name, fake] of [
        ['a', rig.fake],
        ['b', replicaB],
      ] as const) {
        const load = fake.lora.loads.find((l) => l.name === `${run}@${step}`);
        assert.ok(load && load.path.startsWith(join(adapterDirs[name], run)), `${name} loaded ${load?.path}`);
        assert.ok(!load.path.includes(rig.trainer.stateDir), "not the trainer's own path");
        assertHoldsAdapter(load.path, manifest);
      }
      // each replica served the version's first token: the step's publish latency is measured
      assert.ok(rig.fake.probes.includes(`${run}@${step}`) && replicaB.probes.includes(`${run}@${step}`));
    }
    const metrics = await rig.metrics(run);
    assert.ok(metrics.every((m) => typeof m.publishLatencyMs === 'number'));
    // step 2 sampled run@1 on both replicas (the seed picks one per call)
    const policyCalls = (fake: FakeOpenAIServer) => fake.calls.filter((c) => c.role === 'policy' && c.status === 200);
    assert.ok(policyCalls(rig.fake).length > 0, 'replica a sampled');
    assert.ok(policyCalls(replicaB).length > 0, 'replica b sampled');
    assert.equal(replicaB.calls.filter((c) => c.role !== 'policy').length, 0, 'the simulator stays where it is');
  });

  it('a replica whose publisher is away holds the run, naming the replica and its URL; with it back, resume completes', async () => {
    await publishers.b.stop();
    const run = 'replica-away';
    const { handle } = await rig.start(run, loadConfig({ env: {}, set: [...rig.configSet, 'training.steps=1'] }));
    const blocked = await statusWhen(rig, run, (s) => s.phase === 'waiting-for-operator', 'the wait for replica b');
    const reason = blocked.blockedReason ?? '';
    for (const part of [
      'step 1: weights not published to every replica',
      `replica b (${replicaB.url})`,
      `${rig.config.temporal.taskQueuePrefix}attune-publish-b`,
      'no publisher worker took the publish',
    ])
      assert.ok(reason.includes(part), `${part} in ${reason}`);
    assert.ok(!reason.includes('replica a'), 'replica a was published');
    const env = { TEMPORAL_ADDRESS: rig.address };
    const set = rig.configSet.flatMap((s) => ['--set', s]);
    const shown = await attune(['status', run, '--json', ...set], env);
    assert.equal(shown.code, 0, shown.stderr);
    const status = JSON.parse(shown.stdout) as TrainingStatus;
    assert.equal(status.phase, 'waiting-for-operator');
    assert.ok(status.blockedReason?.includes(`replica b (${replicaB.url})`), status.blockedReason ?? '');
    assert.equal((await handle.describe()).status.name, 'RUNNING', 'no step trained on a partial fleet');
    assert.deepEqual(loadsOf(replicaB, run), []);

    await startPublisher('b');
    const resumed = await attune(['resume', run, ...set], env);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal((await handle.result()).stepsApplied, 1);
    assert.deepEqual(loadsOf(replicaB, run), [[`${run}@1`, 200]]);
    assert.deepEqual(loadsOf(rig.fake, run), [[`${run}@1`, 200]], 'replica a, already done, was not loaded again');
  });

  it('export over HTTP gives the adapter files of the local export; the adapter route refuses without the token', async () => {
    const run = 'replicas';
    const env = { TEMPORAL_ADDRESS: rig.address, TRAINER_TOKEN: TOKEN };
    const set = rig.configSet.flatMap((s) => ['--set', s]);
    const root = mkdtempSync(join(tmpdir(), 'attune-export-http-'));
    const local = await attune(
      ['export', `${run}@2`, '--out', join(root, 'local'), '--state-dir', rig.trainer.stateDir, ...set],
      env,
    );
    assert.equal(local.code, 0, local.stderr);
    const remote = await attune(
      ['export', `${run}@2`, '--out', join(root, 'http'), '--trainer-url', rig.trainer.url, '--json', ...set],
      env,
    );
    assert.equal(remote.code, 0, remote.stderr);
    const summary = JSON.parse(remote.stdout) as { digest: string; path: string };
    const manifest = await fetchAdapterManifest(trainer(), run, 2);
    assert.equal(summary.digest, manifest.digest);
    for (const file of manifest.files)
      assert.equal(sha256(join(root, 'http', file.name)), sha256(join(root, 'local', file.name)), file.name);
    assertHoldsAdapter(join(root, 'http'), manifest);

    const refused = await attune(
      ['export', `${run}@2`, '--out', join(root, 'no-token'), '--trainer-url', rig.trainer.url, ...set],
      { ...env, TRAINER_TOKEN: '' },
    );
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /HTTP 401: missing or invalid bearer token/);
    for (const path of ['adapter', 'adapter/adapter_model.safetensors']) {
      const bare = await fetch(`${rig.trainer.url}/v1/runs/${run}/checkpoints/2/${path}`);
      assert.equal(bare.status, 401, path);
    }
    const missing = await attune(
      ['export', `${run}@9`, '--out', join(root, 'nine'), '--trainer-url', rig.trainer.url, ...set],
      env,
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /run 'replicas' has no checkpoint of step 9/);
  });
});
