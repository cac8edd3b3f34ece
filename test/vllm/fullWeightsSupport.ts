import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Transcript } from '../../src/core/transcript.js';
import { REPO_ROOT } from '../../src/paths.js';
import type { ArtifactStore } from '../../src/artifacts/store.js';
import { trainerStateDirWith } from '../support/vllmServer.js';

/**
 * What the real-vLLM suite's tests share: the converted SmolLM2 that scripts/test-vllm.sh passes
 * (its directory and the state directory it sits in), a trainer state directory that reuses it,
 * and the log-prob and version checks of a full-weight vLLM.
 */
export const VLLM_MODEL = process.env.ATTUNE_TEST_VLLM_MODEL ?? 'smollm2-135m-instruct';
export const MODEL_DIR = process.env.ATTUNE_TEST_VLLM_MODEL_DIR ?? '';
/** The `--state-dir` start.sh converted the model into (MODEL_DIR is `<it>/models/smollm2-135m`). */
export const STATE_DIR = process.env.ATTUNE_TEST_VLLM_STATE_DIR ?? '';
export const PROMPT = 'I lost my job today and I do not know what to tell my family.';
/**
 * How far two fp32 computations of one log-prob on the same weights may be apart: vLLM-CPU's kernels
 * and torch's agree within 3e-5 to 6e-5 on SmolLM2 here (measured); one layer on other weights
 * (an output head left on its launch weights) moves them by 0.1 or more.
 */
export const TOLERANCE = 1e-3;

/** A trainer state directory with the converted SmolLM2 vLLM serves already in place (no second conversion). */
export function trainerStateDir(): string {
  return trainerStateDirWith(MODEL_DIR);
}

const rootOf = (url: string) => url.replace(/\/v1$/, '');

/** vLLM's log-probs of `PROMPT`'s own tokens (after the first) under the weights it serves now. */
export async function vllmPromptLogprobs(url: string): Promise<number[]> {
  const response = await fetch(`${url}/completions`, {
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
export function directoryPromptLogprobs(dir: string): number[] {
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

/** The weight version vLLM serves now (`GET /weight_info`). */
export async function weightVersion(url: string): Promise<string> {
  const response = await fetch(`${rootOf(url)}/weight_info`);
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { weight_version: string }).weight_version;
}

/** Where the trainer exported `run`'s step `step` (its full model directory). */
export async function exportedStep(trainerUrl: string, run: string, step: number): Promise<string> {
  const response = await fetch(`${trainerUrl}/v1/runs/${run}/steps/${step}`);
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { checkpoint: { export_path: string } }).checkpoint.export_path;
}

/** Asserts that every assistant turn of `run`'s transcripts names the version its step sampled: run@(step-1). */
export async function assertTurnsNameTheirVersion(store: ArtifactStore, run: string, steps: number): Promise<void> {
  const keys = await store.list(`rollouts/${run}`);
  const seen = new Set<number>();
  for (const key of keys) {
    const transcript = await store.getJson<Transcript>(key);
    assert.ok(transcript && transcript.step !== null, key);
    assert.ok(transcript.turns.length > 0, key);
    seen.add(transcript.step);
    for (const turn of transcript.turns)
      assert.equal(turn.policy.weightVersion, `${run}@${transcript.step - 1}`, `${key} turn ${turn.turn}`);
  }
  assert.deepEqual(
    [...seen].sort((a, b) => a - b),
    Array.from({ length: steps }, (_, i) => i + 1),
    `steps with transcripts: ${keys.join(', ')}`,
  );
}

export const maxDiff = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));
