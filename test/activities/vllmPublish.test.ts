import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { createRunBookkeepingActivities } from '../../src/activities/runBookkeeping.js';
import { vllmErrorMessage } from '../../src/activities/vllmLoad.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import type { LoraAnswer } from '../support/fakeLora.js';

/** A step's adapter directory as the trainer writes it, at rank `r`. */
function adapterDir(r: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'attune-adapter-'));
  writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify({ r, lora_alpha: 2 * r, peft_type: 'LORA' }));
  return dir;
}

describe('publishing a version to vLLM (load_lora_adapter), against the fake vLLM', () => {
  let fake: FakeOpenAIServer;
  const bookkeeping = createRunBookkeepingActivities(new FileArtifactStore(mkdtempSync(join(tmpdir(), 'a-'))));
  const publish = (version: string, exportPath: string) =>
    bookkeeping.publishPolicyVersion({
      mode: 'vllm',
      policyBaseURL: `${fake.url}/`,
      apiKeyEnv: 'POLICY_API_KEY',
      version,
      exportPath,
    });

  beforeEach(async () => {
    fake = await FakeOpenAIServer.start();
  });
  afterEach(() => fake.close());

  it('loads the adapter under the version name; loading the name again replaces its weights in place', async () => {
    const path = adapterDir(8);
    const other = adapterDir(8);
    assert.equal(await publish('run@1', path), 'run@1');
    // A run re-created under its old name: the same version name, other weights.
    assert.equal(await publish('run@1', other), 'run@1');
    assert.deepEqual(
      fake.lora.loads.map((l) => [l.name, l.path, l.status]),
      [
        ['run@1', path, 200],
        ['run@1', other, 200],
      ],
    );
  });

  const refusals: { answer: LoraAnswer; status: number; message: RegExp }[] = [
    { answer: 'rank', status: 500, message: /LoRA rank 64 is greater than max_lora_rank 16\./ },
    { answer: 'missing', status: 404, message: /No adapter found for \/\S+/ },
    { answer: 'key', status: 401, message: /\(check \$POLICY_API_KEY\).*: Unauthorized$/ },
  ];
  for (const { answer, status, message } of refusals) {
    it(`a refused load (${answer}, HTTP ${status}) fails for good, naming endpoint, version, adapter and vLLM's message`, async () => {
      fake.lora.refuse = answer;
      const path = adapterDir(64);
      await assert.rejects(publish('run@3', path), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure, String(error));
        assert.equal(error.type, 'PublishRefused');
        assert.equal(error.nonRetryable, true);
        assert.ok(error.message.includes(`${fake.url}/load_lora_adapter`), error.message);
        assert.ok(error.message.includes(`HTTP ${status}`), error.message);
        assert.ok(error.message.includes('version run@3'), error.message);
        assert.ok(error.message.includes(`adapter ${path}`), error.message);
        assert.match(error.message, message);
        return true;
      });
      assert.equal(fake.lora.loads.length, 1);
    });
  }

  it('a 503 or a dropped connection is left to the retries, and the next attempt loads it', async () => {
    const path = adapterDir(8);
    fake.lora.next.push('unavailable', 'drop');
    await assert.rejects(
      publish('run@2', path),
      (error: unknown) =>
        error instanceof ApplicationFailure &&
        error.type === 'PublishFailed' &&
        !error.nonRetryable &&
        /HTTP 503.*Service Unavailable/.test(error.message),
    );
    // a connection error is not an ApplicationFailure: Temporal retries it
    await assert.rejects(publish('run@2', path), (error: unknown) => !(error instanceof ApplicationFailure));
    assert.equal(await publish('run@2', path), 'run@2');
    assert.deepEqual(
      fake.lora.loads.map((l) => l.status),
      [503, 0, 200],
    );
  });

  it("reads vLLM's message from each shape of error body it writes", () => {
    assert.equal(vllmErrorMessage('{"error":{"message":"rank","type":"BadRequestError","code":400}}'), 'rank');
    assert.equal(
      vllmErrorMessage('{"object":"error","message":"no adapter","type":"NotFoundError","code":404}'),
      'no adapter',
    );
    assert.equal(vllmErrorMessage('{"error":"Unauthorized"}'), 'Unauthorized');
    assert.equal(vllmErrorMessage('Internal Server Error'), 'Internal Server Error');
    assert.equal(vllmErrorMessage(''), '(empty body)');
  });
});
