import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevServer } from '../../src/temporal/devServer.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { assertSameEssentials, essentials } from '../support/runEssentials.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { WorkerProcess } from '../support/workerProcess.js';

const CHAOS_SET = [...TINY_TRAINING('grpo'), 'training.trainer.heartbeatTimeoutMs=3000'];
// Simulator answers depend only on the request, so every run of the same seed sees the same dialogues.
const BEHAVIOUR = { analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }) };
// Slows each optimizer step (before its commit) so a crash can land inside it.
const SLOW_STEPS = { ATTUNE_TRAINER_FAULT_DELAY_S: '2' };

describe('training durability under crashes (real dev server with SQLite, real trainer)', function () {
  this.timeout(600_000);
  let server: DevServer;
  let baseline: ReturnType<typeof essentials>;
  let rig: TrainingRig | undefined;
  let processes: WorkerProcess[] = [];

  before(async () => {
    server = await DevServer.create({ home: mkdtempSync(join(tmpdir(), 'attune-chaos-')), headless: true });
    await server.start();
    const undisturbed = await createTrainingRig({ server, set: CHAOS_SET, behaviour: BEHAVIOUR });
    try {
      await undisturbed.startWorkers();
      const { handle } = await undisturbed.start('baseline');
      assert.equal((await handle.result()).stepsApplied, 3);
      baseline = essentials(await undisturbed.metrics('baseline'));
      assert.equal(baseline.length, 3);
    } finally {
      await undisturbed.close();
    }
  });

  after(async () => {
    await server?.stop();
  });

  afterEach(async () => {
    for (const p of processes) await p.kill();
    processes = [];
    await rig?.close();
    rig = undefined;
  });

  const spawnWorker = (role: 'llm' | 'optimizer') => {
    const p = WorkerProcess.start(server.address, rig!.configSet, ['worker', '--role', role]);
    processes.push(p);
    return p;
  };

  async function expectSameAsBaseline(run: string): Promise<void> {
    const result = await rig!.client.workflow.getHandle(trainingWorkflowId(run)).result();
    assert.equal(result.stepsApplied, 3);
    assert.equal((await rig!.trainer.runState(run)).step, 3, 'the trainer applied exactly 3 steps');
    const metrics = await rig!.metrics(run);
    assert.deepEqual(
      metrics.map((m) => m.step),
      [1, 2, 3],
      'one metrics line per step',
    );
    // Same dialogues, same updates: a step applied twice or a lost rollout would change these.
    assertSameEssentials(essentials(metrics), baseline);
  }

  it('SIGKILL of the LLM-I/O worker mid-step', async () => {
    rig = await createTrainingRig({ server, set: CHAOS_SET, behaviour: BEHAVIOUR });
    const llm = spawnWorker('llm');
    await Promise.all([llm.ready(), spawnWorker('optimizer').ready()]);
    await rig.start('chaos-llm');
    // Step 1 makes 8 analysis calls; the 11th is in the middle of step 2.
    await rig.fake.waitForCall('analysis', 11);
    await llm.kill('SIGKILL');
    await spawnWorker('llm').ready();
    await expectSameAsBaseline('chaos-llm');
  });

  it('SIGKILL of the optimizer worker during an optimizer call', async () => {
    rig = await createTrainingRig({ server, set: CHAOS_SET, behaviour: BEHAVIOUR, trainerEnv: SLOW_STEPS });
    const optimizer = spawnWorker('optimizer');
    await Promise.all([spawnWorker('llm').ready(), optimizer.ready()]);
    await rig.start('chaos-optimizer');
    await optimizer.waitForLog(/"msg":"optimizer step posting".*"run":"chaos-optimizer","step":2/);
    await rig.trainer.waitForLog(/fault delay before commit.*"step": 2/);
    await optimizer.kill('SIGKILL');
    await spawnWorker('optimizer').ready();
    await expectSameAsBaseline('chaos-optimizer');
  });

  it('SIGKILL of the trainer during a step, then a restart', async () => {
    rig = await createTrainingRig({ server, set: CHAOS_SET, behaviour: BEHAVIOUR, trainerEnv: SLOW_STEPS });
    await Promise.all([spawnWorker('llm').ready(), spawnWorker('optimizer').ready()]);
    await rig.start('chaos-trainer');
    await rig.trainer.waitForLog(/fault delay before commit.*"step": 2/);
    await rig.trainer.restart();
    await expectSameAsBaseline('chaos-trainer');
  });

  it('stop and restart of the Temporal dev server mid-run (state in SQLite)', async () => {
    rig = await createTrainingRig({ server, set: CHAOS_SET, behaviour: BEHAVIOUR });
    await Promise.all([spawnWorker('llm').ready(), spawnWorker('optimizer').ready()]);
    await rig.start('chaos-server');
    await rig.fake.waitForCall('analysis', 11);
    await server.stop();
    await server.start();
    await expectSameAsBaseline('chaos-server');
  });
});
