import assert from 'node:assert/strict';
import { statfsSync } from 'node:fs';
import { join } from 'node:path';
import { trainingWorkflowId, type TrainingStatus } from '../../src/workflows/training.js';
import { DEFAULT_SAME_ERROR_ATTEMPTS } from '../../src/core/training/sameTrainerError.js';
import { trainingStatus } from '../../src/client/trainingControl.js';
import { attune } from '../cli/attuneProcess.js';
import { OutageProxy } from '../support/outageProxy.js';
import {
  fillWithBallast,
  mountTmpfs,
  removeBallast,
  resizeTmpfs,
  shrinkTmpfsToUse,
  requireTmpfs,
  unmountTmpfs,
} from '../support/tmpfs.js';
import { assertSameEssentials, essentials } from '../support/runEssentials.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { statusWhen } from '../support/statusWhen.js';
import { pausedBefore } from '../support/pausedBefore.js';

// Simulator answers depend only on the request, so every run of the same seed sees the same dialogues.
const BEHAVIOUR = { analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }) };
const STEPS = 3;
/** GRPO sampling at temperature 1: for faults on the optimizer side, where no dialogue is rolled out again. */
const SAMPLED = TINY_TRAINING('grpo', STEPS);
/** The next step's rollouts overlapping the optimizer step. */
const PIPELINED = [...SAMPLED, 'training.maxStaleness=1'];
/**
 * PPO with a greedy policy: for faults that fail dialogues. `attune resume` rolls a failed dialogue
 * out again as a new attempt with its own seed; greedy decoding makes that attempt the same
 * dialogue, so the run can still be compared with an undisturbed one.
 */
const GREEDY = [...TINY_TRAINING('ppo', STEPS), 'policy.temperature=0'];
/** Each step's LoRA adapter published to vLLM (the fake's runtime LoRA API). */
const VLLM = [...SAMPLED, 'training.publish.mode=vllm', 'training.lora.r=8'];
/**
 * Waits of 1, 2, then 4 s between attempts at an optimizer step (default 2 s doubling up to a minute):
 * a test that fails a step seven times counts its attempts; it does not time them.
 */
const QUICK_OPTIMIZER_RETRY = [
  'training.trainer.retry.initialIntervalMs=1000',
  'training.trainer.retry.maximumIntervalMs=4000',
];
/** statfs(2)'s f_type of a tmpfs (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;
/** Room for a tiny-random run's checkpoints; the ballast takes whatever is left. */
const TMPFS_MIB = 16;

type Essentials = ReturnType<typeof essentials>;

/** The run's status once it waits for the operator. */
function waitingForOperator(rig: TrainingRig, run: string, timeoutMs: number): Promise<TrainingStatus> {
  return statusWhen(rig, run, (s) => s.phase === 'waiting-for-operator', 'the run to wait for the operator', timeoutMs);
}

describe('training under faults: each disturbed run matches an undisturbed run of the same seed', function () {
  this.timeout(900_000);
  const baselines = new Map<string[], Promise<Essentials>>();
  let rig: TrainingRig | undefined;
  let proxy: OutageProxy | undefined;
  let mounted: string[] = [];

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    await proxy?.close();
    proxy = undefined;
    for (const dir of mounted) unmountTmpfs(dir);
    mounted = [];
  });

  /** The undisturbed run of a config, run once per config the first time a test needs it. */
  function baseline(set: string[]): Promise<Essentials> {
    let found = baselines.get(set);
    if (!found) {
      // A run name is never trained twice on one server: each config's baseline has its own.
      const run = `baseline-${baselines.size + 1}`;
      found = (async () => {
        const undisturbed = await createTrainingRig({ set, behaviour: BEHAVIOUR });
        try {
          await undisturbed.startWorkers();
          const { handle } = await undisturbed.start(run);
          assert.equal((await handle.result()).stepsApplied, STEPS);
          const metrics = essentials(await undisturbed.metrics(run));
          assert.equal(metrics.length, STEPS, `${run}: one metrics line per step`);
          return metrics;
        } finally {
          await undisturbed.close();
        }
      })();
      baselines.set(set, found);
    }
    return found;
  }

  /** Same steps, each applied once by the trainer, no dialogue lost or counted twice, identical metrics. */
  async function expectSameAsBaseline(set: string[], run: string): Promise<void> {
    const result = await rig!.client.workflow.getHandle(trainingWorkflowId(run)).result();
    assert.equal(result.stepsApplied, STEPS);
    assert.equal((await rig!.trainer.runState(run)).step, STEPS, `the trainer applied exactly ${STEPS} steps`);
    const metrics = await rig!.metrics(run);
    assert.deepEqual(
      metrics.map((m) => m.step),
      [1, 2, 3],
      'one metrics line per step',
    );
    // A step applied twice, or a dialogue lost or counted twice, would change these.
    assertSameEssentials(essentials(metrics), await baseline(set));
  }

  // The same fault with the next step's rollouts overlapping the optimizer step.
  for (const [set, suffix, label] of [
    [SAMPLED, '', ''],
    [PIPELINED, '-s1', 'maxStaleness 1: '],
  ] as const) {
    it(`${label}the trainer raises after the update changed the weights (after_update@2:1), then succeeds on retry`, async () => {
      const run = `fault-after-update${suffix}`;
      await baseline(set);
      rig = await createTrainingRig({
        set,
        behaviour: BEHAVIOUR,
        trainerEnv: { ATTUNE_TRAINER_FAULT_INJECTION: 'after_update@2:1' },
      });
      const fired = rig.trainer.waitForLog(/"injected fault".*"point": "after_update".*"step": 2/);
      await rig.startWorkers();
      await rig.start(run);
      await fired;
      await expectSameAsBaseline(set, run);
    });
  }

  it('the trainer answers 500 on every attempt at a step: status shows its error while retrying, then the run waits for the operator, resume completes it', async () => {
    const run = 'fault-trainer-500';
    await baseline(SAMPLED);
    rig = await createTrainingRig({
      set: SAMPLED,
      behaviour: BEHAVIOUR,
      trainerEnv: { ATTUNE_TRAINER_FAULT_INJECTION: `after_update@2:${DEFAULT_SAME_ERROR_ATTEMPTS}` },
    });
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    const statusArgs = ['status', run, '--json', ...rig.configSet.flatMap((s) => ['--set', s])];
    const env = { TEMPORAL_ADDRESS: rig.address };
    const injected = /HTTP 500.*injected fault/;

    // While the activity retries, `attune status` shows the trainer's error.
    const deadline = Date.now() + 120_000;
    let retrying: TrainingStatus | null = null;
    while (retrying === null) {
      const cli = await attune(statusArgs, env);
      assert.equal(cli.code, 0, cli.stderr);
      const shown = JSON.parse(cli.stdout) as TrainingStatus;
      if (shown.phase !== 'waiting-for-operator' && /optimizer step retrying/.test(shown.blockedReason ?? ''))
        retrying = shown;
      else if (Date.now() > deadline) throw new Error(`no retrying status shown; last ${cli.stdout}`);
    }
    assert.match(retrying.blockedReason ?? '', injected);

    const blocked = await waitingForOperator(rig, run, 180_000);
    assert.equal(blocked.step, 2);
    assert.match(
      blocked.blockedReason ?? '',
      new RegExp(`same error on ${DEFAULT_SAME_ERROR_ATTEMPTS} attempts in a row: .*HTTP 500`),
    );
    assert.equal((await rig.trainer.runState(run)).step, 1, 'step 2 was not applied');
    const cli = await attune(statusArgs, env);
    const shown = JSON.parse(cli.stdout) as TrainingStatus;
    assert.equal(shown.phase, 'waiting-for-operator');
    assert.match(shown.blockedReason ?? '', injected);

    // The fault has fired its count: the next attempt succeeds.
    await handle.executeUpdate('resume');
    await expectSameAsBaseline(SAMPLED, run);
  });

  it('the trainer alternates two server errors, then repeats one: the run retries while they differ, and waits for the operator once one comes sameErrorAttempts times in a row', async () => {
    const run = 'fault-trainer-errors';
    await baseline(SAMPLED);
    const bound = 3;
    proxy = await OutageProxy.start();
    rig = await createTrainingRig({
      set: [
        ...SAMPLED,
        ...QUICK_OPTIMIZER_RETRY,
        `trainer.url=${proxy.url}`,
        `training.trainer.sameErrorAttempts=${bound}`,
      ],
      behaviour: BEHAVIOUR,
    });
    proxy.target = rig.trainer.url;
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    await pausedBefore(rig, handle, run, 2);
    const a = 'CUDA error: an illegal memory access was encountered (test fault A)';
    const b = 'NCCL watchdog: collective 41 timed out after 600000 ms (test fault B)';
    // Five attempts alternate, more than the bound; then A comes `bound` times in a row.
    proxy.stepErrors = [a, b, a, b, a, a, a];
    await handle.executeUpdate('resume');

    // After five failed attempts, three of them A's, the sixth is scheduled: the run still retries.
    const deadline = Date.now() + 300_000;
    for (;;) {
      const status = await trainingStatus(rig.client, run);
      assert.notEqual(status.phase, 'waiting-for-operator', `waited before the 6th attempt: ${status.blockedReason}`);
      if (/optimizer step retrying \(attempt 6\): .*HTTP 500: CUDA error/.test(status.blockedReason ?? '')) break;
      if (Date.now() > deadline) throw new Error(`no 6th attempt; last status ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 200));
    }

    const blocked = await waitingForOperator(rig, run, 300_000);
    assert.equal(proxy.failedSteps, 7, 'the run waited for the operator at the third A in a row, not before');
    assert.equal(blocked.step, 2);
    const sameError = new RegExp(`same error on ${bound} attempts in a row: .*HTTP 500: CUDA error.*test fault A`);
    assert.match(blocked.blockedReason ?? '', sameError);
    const cli = await attune(['status', run, '--json', ...rig.configSet.flatMap((s) => ['--set', s])], {
      TEMPORAL_ADDRESS: rig.address,
    });
    assert.equal(cli.code, 0, cli.stderr);
    const shown = JSON.parse(cli.stdout) as TrainingStatus;
    assert.equal(shown.phase, 'waiting-for-operator');
    assert.match(shown.blockedReason ?? '', sameError);
    assert.equal((await rig.trainer.runState(run)).step, 1, 'step 2 was not applied');

    // The proxy has no errors left: the next attempt reaches the trainer.
    await handle.executeUpdate('resume');
    await expectSameAsBaseline(SAMPLED, run);
    assert.equal(proxy.failedSteps, 7);
  });

  it('the trainer state directory fills up during a commit: the run waits for the operator, resume completes it', async () => {
    requireTmpfs();
    const run = 'fault-trainer-disk';
    await baseline(SAMPLED);
    rig = await createTrainingRig({ set: SAMPLED, behaviour: BEHAVIOUR });
    const stateDir = rig.trainer.stateDir;
    // The trainer moves onto a small file system of its own before the run begins.
    await rig.trainer.kill();
    mountTmpfs(stateDir, TMPFS_MIB);
    mounted.push(stateDir);
    await rig.trainer.start();
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    await pausedBefore(rig, handle, run, 2);
    assert.equal(statfsSync(stateDir).type, TMPFS_MAGIC, `the trainer's state directory ${stateDir} is the tmpfs`);
    const ballast = await fillWithBallast(stateDir);
    assert.equal(statfsSync(stateDir).bavail, 0, 'the ballast took every free block');
    await handle.executeUpdate('resume');

    const blocked = await waitingForOperator(rig, run, 120_000);
    assert.equal(blocked.step, 2);
    const diskFull = new RegExp(`HTTP 507: disk full: no space left in the state directory ${stateDir}`);
    assert.match(blocked.blockedReason ?? '', diskFull);
    assert.equal((await rig.trainer.runState(run)).step, 1, 'step 2 was not applied');
    const cli = await attune(['status', run, '--json', ...rig.configSet.flatMap((s) => ['--set', s])], {
      TEMPORAL_ADDRESS: rig.address,
    });
    assert.equal(cli.code, 0, cli.stderr);
    const shown = JSON.parse(cli.stdout) as TrainingStatus;
    assert.equal(shown.phase, 'waiting-for-operator');
    assert.match(shown.blockedReason ?? '', diskFull);

    await removeBallast(ballast);
    await handle.executeUpdate('resume');
    await expectSameAsBaseline(SAMPLED, run);
  });

  it('the trainer state directory tmpfs is shrunk to 64 KB above its use after step 1: step 2 commits by its log, its background snapshot fails on the full disk, and step 3 waits for the operator within a minute; resume after enlarging completes it', async () => {
    requireTmpfs();
    const run = 'fault-trainer-disk-shrunk';
    await baseline(SAMPLED);
    rig = await createTrainingRig({ set: SAMPLED, behaviour: BEHAVIOUR });
    const stateDir = rig.trainer.stateDir;
    await rig.trainer.kill();
    mountTmpfs(stateDir, TMPFS_MIB);
    mounted.push(stateDir);
    await rig.trainer.start();
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    await pausedBefore(rig, handle, run, 2);
    shrinkTmpfsToUse(stateDir, 64 * 1024);
    await handle.executeUpdate('resume');

    // Step 2 is durable by its log entry and result (a few KB): its full-weight snapshot, written in the
    // background, meets the full disk, and the next step fails with it (507) before changing anything.
    const blocked = await waitingForOperator(rig, run, 60_000);
    assert.equal(blocked.step, 3);
    const diskFull = new RegExp(`HTTP 507: disk full: no space left in the state directory ${stateDir}`);
    assert.match(blocked.blockedReason ?? '', diskFull);
    assert.equal((await rig.trainer.runState(run)).step, 2, 'step 3 was not applied');
    const cli = await attune(['status', run, '--json', ...rig.configSet.flatMap((s) => ['--set', s])], {
      TEMPORAL_ADDRESS: rig.address,
    });
    assert.equal(cli.code, 0, cli.stderr);
    const shown = JSON.parse(cli.stdout) as TrainingStatus;
    assert.equal(shown.phase, 'waiting-for-operator');
    assert.match(shown.blockedReason ?? '', diskFull);

    resizeTmpfs(stateDir, TMPFS_MIB);
    await handle.executeUpdate('resume');
    await expectSameAsBaseline(SAMPLED, run);
  });

  it('the artifact directory fills up while transcripts are written: the run waits for the operator, resume completes it', async function () {
    requireTmpfs();
    const run = 'fault-artifact-disk';
    await baseline(GREEDY);
    rig = await createTrainingRig({ set: GREEDY, behaviour: BEHAVIOUR });
    const artifacts = join(rig.config.home, 'artifacts');
    assert.equal(rig.store.location, artifacts);
    mountTmpfs(artifacts, TMPFS_MIB);
    mounted.push(artifacts);
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    await pausedBefore(rig, handle, run, 2);
    const ballast = await fillWithBallast(artifacts);
    await handle.executeUpdate('resume');

    // A full artifact store fails the transcript write at once (no retries), and with it the dialogue.
    const blocked = await waitingForOperator(rig, run, 600_000);
    assert.equal(blocked.step, 2);
    assert.match(
      blocked.blockedReason ?? '',
      /2 of 2 rollouts failed .*artifact store .* is full \(ENOSPC: no space left on device/,
    );

    await removeBallast(ballast);
    await handle.executeUpdate('resume');
    await expectSameAsBaseline(GREEDY, run);
  });

  it('the policy endpoint is down longer than its retries, then back: the dialogues wait at their failed call, resume continues them at temperature 1', async () => {
    const run = 'fault-policy-outage';
    await baseline(SAMPLED);
    // With the trainer serving the policy, the outage is a proxy that refuses its chat completions only.
    proxy = await OutageProxy.start();
    const set = [...SAMPLED, `trainer.url=${proxy.url}`, 'policy.retry.maximumAttempts=2'];
    rig = await createTrainingRig({ set, behaviour: BEHAVIOUR });
    proxy.target = rig.trainer.url;
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    await pausedBefore(rig, handle, run, 2);
    proxy.down = true;
    await handle.executeUpdate('resume');

    const blocked = await statusWhen(
      rig,
      run,
      (s) => s.phase === 'waiting-for-operator' && s.rollouts.waiting === 4,
      'every dialogue of step 2 to wait',
      120_000,
    );
    assert.equal(blocked.step, 2);
    assert.match(blocked.blockedReason ?? '', /4 dialogues wait for an operator .*HTTP 500/);
    assert.ok(proxy.refused >= 8, `each dialogue's policy call was refused twice (${proxy.refused} refused)`);

    proxy.down = false;
    await handle.executeUpdate('resume');
    await expectSameAsBaseline(SAMPLED, run);
  });

  it('vLLM restarts mid-step and loses its adapters: the policy calls of NAME@1 get 404, publish it again from the trainer checkpoint and go on', async () => {
    const run = 'fault-vllm-restart';
    await baseline(VLLM);
    rig = await createTrainingRig({ set: VLLM, behaviour: BEHAVIOUR });
    const fake = rig.fake;
    // As vLLM: a name it has not loaded (any more) does not exist.
    fake.lora.servesOnlyLoaded = true;
    let restarted: Promise<void> | null = null;
    fake.lora.afterLoad = (name, status) => {
      if (restarted !== null || name !== `${run}@1` || status !== 200) return;
      // Once step 2's first policy call is in, the server restarts behind it: its adapters are gone.
      restarted = fake.waitForCall('policy', fake.count('policy') + 1).then(() => fake.lora.forgetAll());
    };
    await rig.startWorkers();
    await rig.start(run);
    await expectSameAsBaseline(VLLM, run);
    assert.ok(restarted !== null, 'the fake vLLM restarted');
    assert.ok(fake.missing.includes(`${run}@1`), `a policy call of ${run}@1 got "does not exist"`);
    const reloads = fake.lora.loads.filter((l) => l.name === `${run}@1` && l.status === 200);
    assert.ok(reloads.length >= 2, `${run}@1 loaded again after the restart (${reloads.length} loads)`);
    assert.equal(new Set(reloads.map((l) => l.path)).size, 1, "from the trainer's checkpoint of step 1");
  });
});
