import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { temporal } from '@temporalio/proto';
import { DevServer } from '../../src/temporal/devServer.js';
import type { AttuneConfig } from '../../src/config/schema.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { attune } from '../cli/attuneProcess.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { statusWhen as statusWithin } from '../support/statusWhen.js';
import { MODEL_DIR, trainerStateDir, VLLM_MODEL } from './fullWeightsSupport.js';

/**
 * `training.publish.mode: vllm` against a real vLLM (CPU build) serving SmolLM2-135M-Instruct with
 * runtime LoRA loading, the real trainer and a real Temporal dev server; the simulated user is the
 * fake OpenAI server. Run by scripts/test-vllm.sh (`npm run test:vllm`), which starts vLLM with
 * --max-lora-rank 16 and passes its URL, served model name and converted model directory.
 */
const VLLM_URL = process.env.ATTUNE_TEST_VLLM_URL ?? '';

interface VllmModel {
  id: string;
  root: string;
  parent: string | null;
}

async function vllmModels(): Promise<VllmModel[]> {
  const response = await fetch(`${VLLM_URL}/models`);
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { data: VllmModel[] }).data;
}

/** vLLM's log-probs of `prompt`'s own tokens under `model` (the base or a loaded adapter). */
async function promptLogprobs(model: string, prompt: string): Promise<{ tokens: string[]; logprobs: number[] }> {
  const response = await fetch(`${VLLM_URL}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt, max_tokens: 1, temperature: 0, echo: true, logprobs: 0 }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const choice = (
    JSON.parse(text) as { choices: { logprobs: { tokens: string[]; token_logprobs: (number | null)[] } }[] }
  ).choices[0]!;
  // The first prompt token has no log-prob; the last entry is the generated token.
  const n = choice.logprobs.tokens.length - 1;
  return {
    tokens: choice.logprobs.tokens.slice(1, n),
    logprobs: choice.logprobs.token_logprobs.slice(1, n).map((l) => l ?? NaN),
  };
}

/** vLLM's answer to loading `path` under a new `name` (not in place). */
async function loadAdapter(name: string, path: string): Promise<void> {
  const response = await fetch(`${VLLM_URL}/load_lora_adapter`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ lora_name: name, lora_path: path }),
  });
  assert.equal(response.status, 200, await response.text());
}

const eventMs = (e: temporal.api.history.v1.IHistoryEvent) =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

/** Per step, ms from the trainer's commit (the optimizer step activity done) to vLLM having the adapter (publish done). */
function publishLatencies(history: temporal.api.history.v1.IHistory): number[] {
  const events = history.events ?? [];
  const typeOf = new Map<string, string>();
  for (const e of events)
    if (e.activityTaskScheduledEventAttributes)
      typeOf.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
  const latencies: number[] = [];
  let committed: number | null = null;
  for (const e of events) {
    const done = e.activityTaskCompletedEventAttributes;
    if (!done) continue;
    const type = typeOf.get(String(done.scheduledEventId));
    if (type === 'applyOptimizerStep') committed = eventMs(e);
    if (type === 'publishPolicyVersion' && committed !== null) latencies.push(Math.round(eventMs(e) - committed));
  }
  return latencies;
}

const maxDiff = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));

/** vLLM on CPU is slow: a longer bound than the support's default. */
const statusWhen = (...[rig, run, predicate, what]: Parameters<typeof statusWithin>) =>
  statusWithin(rig, run, predicate, what, 300_000);

describe('training.publish.mode: vllm against a real vLLM (SmolLM2-135M on CPU, real trainer, real dev server)', function () {
  this.timeout(900_000);
  let rig: TrainingRig;
  const SET = [
    ...TINY_TRAINING('grpo', 3),
    'training.scenariosPerStep=1',
    'training.dialogue.maxTurns=1',
    'training.baseModel=smollm2-135m',
    'training.publish.mode=vllm',
    'training.lora.r=8',
    'training.lora.alpha=16',
    'training.hyperparameters.max_length=512',
    `policy.baseURL=${VLLM_URL}`,
    `policy.model=${VLLM_MODEL}`,
    'policy.maxTokens=12',
    'policy.timeoutMs=120000',
  ];
  before(async () => {
    assert.ok(VLLM_URL && MODEL_DIR, 'run through scripts/test-vllm.sh (npm run test:vllm): it starts vLLM');
    rig = await createTrainingRig({ trainerStateDir: trainerStateDir(), set: SET });
    await rig.startWorkers();
  });
  after(() => rig?.close());

  it('a 3-step GRPO LoRA run: token ids from vLLM, no re-tokenising, fp32 gap < 1e-3, step k samples run@k-1, the adapter changes log-probs', async () => {
    const run = 'vllm-grpo';
    const { handle } = await rig.start(run);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 3);
    assert.equal(result.version, `${run}@3`);

    const metrics = await rig.metrics(run);
    assert.deepEqual(
      metrics.map((m) => m.step),
      [1, 2, 3],
    );
    assert.deepEqual(
      metrics.map((m) => m.policyVersion),
      [VLLM_MODEL, `${run}@1`, `${run}@2`],
    );
    for (const m of metrics) {
      assert.ok(m.rollouts.ok > 0, `step ${m.step}: rollouts ${JSON.stringify(m.rollouts)}`);
      assert.equal(m.trainer.retokenized_share, 0, `step ${m.step}: every sample carries vLLM's token ids`);
      const gap = m.trainer.logprob_gap_max;
      assert.ok(typeof gap === 'number' && gap < 1e-3, `step ${m.step}: logprob_gap_max ${gap}`);
    }

    // The newest publishKeep (2) versions are loaded in vLLM, as adapters on the served base model;
    // run@1 was unloaded once run@3 served.
    const models = await vllmModels();
    const listed = JSON.stringify(models.map((m) => m.id));
    assert.equal(
      models.some((m) => m.id === `${run}@1`),
      false,
      `${run}@1 unloaded: ${listed}`,
    );
    for (const step of [2, 3]) {
      const loaded = models.find((m) => m.id === `${run}@${step}`);
      assert.ok(loaded, `${run}@${step} in /v1/models: ${listed}`);
      assert.equal(loaded.parent, VLLM_MODEL);
      assert.match(loaded.root, new RegExp(`checkpoints/step-00000${step}/policy$`));
    }
    // Each step's commit-to-first-token time, measured by the run itself.
    // A latency is a time on one clock that passed: above 0, and below the bound a publish could take here.
    for (const m of metrics)
      assert.ok(
        typeof m.publishLatencyMs === 'number' && m.publishLatencyMs > 0 && m.publishLatencyMs < 300_000,
        `step ${m.step}: publishLatencyMs ${m.publishLatencyMs}`,
      );
    console.log(`      publishLatencyMs per step ${metrics.map((m) => m.publishLatencyMs).join(', ')}`);

    // The same tokens score differently under the base and the first adapter (loaded again under a name of its own).
    const prompt = 'I lost my job today and I do not know what to tell my family.';
    const base = await promptLogprobs(VLLM_MODEL, prompt);
    const second = models.find((m) => m.id === `${run}@2`)!.root;
    const first = `${run}-step1-${Date.now()}`;
    await loadAdapter(first, second.replace(/step-000002\/policy$/, 'step-000001/policy'));
    const tuned = await promptLogprobs(first, prompt);
    assert.deepEqual(tuned.tokens, base.tokens);
    const diff = maxDiff(base.logprobs, tuned.logprobs);
    assert.ok(diff > 1e-4, `max |base - ${run}@1| log-prob difference ${diff}`);
    const gaps = metrics.map((m) => m.trainer.logprob_gap_max!.toExponential(1)).join(', ');
    console.log(`      logprob_gap_max per step ${gaps}; base vs ${run}@1 max log-prob difference ${diff.toFixed(4)}`);
    // The run continues as new after each step: every execution's history has its own publishes.
    const latencies: number[] = [];
    for await (const execution of rig.client.workflow.list({ query: `WorkflowId = '${trainingWorkflowId(run)}'` }))
      latencies.push(
        ...publishLatencies(await rig.client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory()),
      );
    // Each execution applies one step and publishes it: one publish per step, none repeated or lost.
    assert.equal(latencies.length, metrics.length, `publishes ${JSON.stringify(latencies)}`);
    for (const latency of latencies) assert.ok(latency > 0, `commit to loaded ${latency} ms`);
    console.log(`      trainer commit to adapter loaded in vLLM: ${latencies.sort((a, b) => a - b).join(', ')} ms`);
  });

  it('vLLM refuses a rank-64 adapter (--max-lora-rank 16): one attempt, PublishRefused and non-retryable, the run waits for the operator with the reason in attune status', async () => {
    const run = 'vllm-rank64';
    const version = `${run}@1`;
    const config = {
      ...rig.config,
      policy: { ...rig.config.policy, maxLoraRank: 64 },
      training: {
        ...rig.config.training,
        steps: 1,
        lora: { ...rig.config.training.lora!, r: 64, alpha: 64 },
      },
    };
    const { handle } = await rig.start(run, config);
    const blocked = await statusWhen(rig, run, (s) => s.phase === 'waiting-for-operator', 'the operator wait');
    const reason = blocked.blockedReason ?? '';
    assert.match(reason, /^step 1: weights not published: refused: vLLM /);
    for (const part of [`${VLLM_URL}/load_lora_adapter`, `version ${version}`, 'checkpoints/step-000001/policy'])
      assert.ok(reason.includes(part), `${part} in ${reason}`);
    assert.match(reason, /rank/i);

    // The history: the load failed once, typed and non-retryable.
    const history = await handle.fetchHistory();
    const failures = (history.events ?? [])
      .map((e: temporal.api.history.v1.IHistoryEvent) => e.activityTaskFailedEventAttributes?.failure)
      .filter((f) => f?.applicationFailureInfo?.type === 'PublishRefused');
    assert.equal(failures.length, 1, 'one refused load');
    assert.equal(failures[0]!.applicationFailureInfo!.nonRetryable, true);
    const started = (history.events ?? []).filter(
      (e) => e.activityTaskStartedEventAttributes && e.eventId && e.activityTaskStartedEventAttributes.attempt! > 1,
    );
    assert.equal(started.length, 0, 'no activity retried');
    assert.equal(
      (await vllmModels()).some((m) => m.id === version),
      false,
    );

    const text = await attune(['status', run, ...rig.configSet.flatMap((s) => ['--set', s])], {
      TEMPORAL_ADDRESS: rig.address,
    });
    assert.equal(text.code, 0, text.stderr);
    const flat = text.stdout.replace(/\s+/g, ' ');
    assert.match(flat, /waiting-for-operator/);
    assert.ok(flat.includes(`refused: vLLM ${VLLM_URL}/load_lora_adapter`), text.stdout);
    assert.ok(flat.includes(`version ${version}`), text.stdout);
    await handle.terminate('test: refused load seen');
  });

  it('never stale: a run re-created under its old name (new Temporal server, new trainer state) while vLLM stays up serves its own weights as run@1', async () => {
    const run = 'vllm-again';
    const prompt = 'My sister stopped talking to me and I miss her.';
    const oneStep = (config: AttuneConfig, learningRate: number, seed: number): AttuneConfig => ({
      ...config,
      training: {
        ...config.training,
        steps: 1,
        seed,
        hyperparameters: { ...config.training.hyperparameters, learning_rate: learningRate },
      },
    });
    const first = await rig.start(run, oneStep(rig.config, 1e-3, 7));
    assert.equal((await first.handle.result()).version, `${run}@1`);
    const before = await promptLogprobs(`${run}@1`, prompt);
    assert.deepEqual((await promptLogprobs(`${run}@1`, prompt)).logprobs, before.logprobs, 'scoring is deterministic');

    // The deployment is gone (its Temporal history, its trainer state); vLLM still has run@1.
    const server = await DevServer.create({ home: mkdtempSync(join(tmpdir(), 'attune-vllm-again-')), headless: true });
    await server.start();
    const again = await createTrainingRig({ server, trainerStateDir: trainerStateDir(), set: SET });
    try {
      await again.startWorkers();
      const second = await again.start(run, oneStep(again.config, 1e-2, 8));
      assert.equal((await second.handle.result()).version, `${run}@1`);
      const loaded = (await vllmModels()).find((m) => m.id === `${run}@1`);
      assert.ok(loaded);
      assert.ok(loaded.root.startsWith(again.trainer.stateDir), `${loaded.root} is the new run's adapter`);
      const after = await promptLogprobs(`${run}@1`, prompt);
      assert.ok(maxDiff(before.logprobs, after.logprobs) > 1e-4, 'run@1 no longer scores as the deleted run did');
      // Exactly the new adapter's weights: the same scores as that adapter loaded under a name of its own.
      const check = `${run}-check-${Date.now()}`;
      await loadAdapter(check, loaded.root);
      assert.ok(maxDiff((await promptLogprobs(check, prompt)).logprobs, after.logprobs) < 1e-6);
    } finally {
      await again.close();
      await server.stop();
    }
  });
});
