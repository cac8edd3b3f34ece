import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../../src/config/load.js';
import { trainingStatusQuery } from '../../src/workflows/training.js';
import { createPublisherWorker } from '../../src/workers/publisherWorker.js';
import { answered } from '../support/eventually.js';
import { assertSameEssentials, essentials } from '../support/runEssentials.js';
import { RunningWorkers } from '../support/runningWorkers.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { assertTurnsNameTheirVersion } from '../vllm/fullWeightsSupport.js';

const TOKEN = 'replica-restart-token-0123456789';

describe('full fine-tuning on one vLLM replica that restarts mid-step: its publisher reloads it within the step, no operator (real dev server, real trainer, fake vLLM)', function () {
  this.timeout(600_000);
  let rig: TrainingRig;
  let connection: NativeConnection;
  const publisher = new RunningWorkers();
  const adapterDir = mkdtempSync(join(tmpdir(), 'attune-restarted-replica-'));
  /** Set by the test: the replica restarts (back on its launch weights) inside its first policy call on this version. */
  let restartOn: string | null = null;
  let savedToken: string | undefined;

  before(async () => {
    savedToken = process.env.TRAINER_TOKEN;
    process.env.TRAINER_TOKEN = TOKEN;
    rig = await createTrainingRig({
      trainerEnv: { TRAINER_TOKEN: TOKEN },
      behaviour: {
        fault: ({ role }) => {
          if (role === 'policy' && restartOn !== null && rig.fake.fullWeights.version === restartOn) {
            restartOn = null;
            rig.fake.fullWeights.restart();
          }
          return undefined;
        },
      },
      set: [...TINY_TRAINING('grpo', 2), 'training.publish.mode=vllm', 'training.publish.publisherWaitMs=3000'],
    });
    // One replica: no other to send its calls to, as on a single vLLM host run across hosts.
    rig.configSet.push(`policy.replicas=[{"name": "only", "baseURL": "${rig.fake.url}"}]`);
    rig.config = loadConfig({ env: {}, set: rig.configSet });
    await rig.startWorkers();
    connection = await NativeConnection.connect({ address: rig.address });
    publisher.start([
      await createPublisherWorker({
        connection,
        namespace: 'default',
        config: rig.config,
        store: rig.store,
        replica: 'only',
        adapterDir,
        weightsCheckMs: 200,
      }),
    ]);
  });
  after(async () => {
    await publisher.stop();
    await rig?.close();
    await connection?.close();
    if (savedToken === undefined) delete process.env.TRAINER_TOKEN;
    else process.env.TRAINER_TOKEN = savedToken;
  });

  /**
   * The run to its end. A run that waits for an operator instead (its dialogues failed for good, too
   * many to train on) fails the test at once rather than when mocha's timeout runs out.
   */
  async function runToEnd(run: string) {
    const { handle } = await rig.start(run, rig.config);
    let over = false;
    const result = handle.result().finally(() => (over = true));
    void result.catch(() => undefined);
    while (!over) {
      const status = await answered(() => handle.query(trainingStatusQuery));
      if (!over && status.blockedReason) {
        await handle.terminate('the test saw it wait for an operator');
        throw new Error(`${run} waits for an operator: ${status.blockedReason}`);
      }
      await sleep(200);
    }
    return result;
  }

  const labels = (run: string) =>
    rig.fake.fullWeights.calls
      .filter((c) => c.route === '/update_weight_version' && JSON.stringify(c.body).includes(`${run}@`))
      .map((c) => (c.body as { new_version: string }).new_version);
  const reloads = (run: string) =>
    rig.fake.fullWeights.calls
      .filter((c) => c.route === '/collective_rpc')
      .map((c) => (c.body as { kwargs: { weights_path: string } }).kwargs.weights_path)
      .filter((path) => path.startsWith(join(adapterDir, run)));

  it('the replica restarted on its launch weights during step 2: the calls wait while its publisher reloads run@1, and the run ends with the metrics of an undisturbed run', async () => {
    const undisturbed = 'one-replica-undisturbed';
    assert.equal((await runToEnd(undisturbed)).stepsApplied, 2);
    const expected = essentials(await rig.metrics(undisturbed));
    assert.deepEqual(
      labels(undisturbed),
      [0, 1, 2].flatMap((k) => [`loading ${undisturbed}@${k}`, `${undisturbed}@${k}`]),
    );

    const run = 'one-replica-restarted';
    restartOn = `${run}@1`;
    const result = await runToEnd(run);
    assert.equal(restartOn, null, 'the replica restarted during step 2');
    assert.equal(result.stepsApplied, 2);
    assertSameEssentials(essentials(await rig.metrics(run)), expected);
    await assertTurnsNameTheirVersion(rig.store, run, 2);
    // run@1 loaded twice: published after step 1, then again within step 2, by the publisher from its
    // own download, once the replica came back on its launch weights; then step 2 as usual.
    assert.deepEqual(
      labels(run),
      [0, 1, 1, 2].flatMap((k) => [`loading ${run}@${k}`, `${run}@${k}`]),
    );
    const paths = reloads(run);
    assert.equal(paths.length, 4);
    assert.equal(paths[2], paths[1], "the restore reloaded step 1's directory on the replica's disk");
    assert.equal(rig.fake.fullWeights.version, `${run}@2`);
    assert.equal(rig.fake.fullWeights.paused, false);
  });
});
