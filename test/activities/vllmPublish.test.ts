import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { createRunBookkeepingActivities } from '../../src/activities/runBookkeeping.js';
import { saysVersionNotServed, versionsToUnload, versionStep } from '../../src/vllm/adapters.js';
import { vllmErrorMessage } from '../../src/vllm/load.js';
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
  const publish = (version: string, exportPath: string, unload?: { runName: string; keep: number }) =>
    bookkeeping.publishPolicyVersion({
      mode: 'vllm',
      policyBaseURL: `${fake.url}/`,
      apiKeyEnv: 'POLICY_API_KEY',
      version,
      exportPath,
      ...(unload ? { unload } : {}),
    });

  beforeEach(async () => {
    fake = await FakeOpenAIServer.start();
  });
  afterEach(() => fake.close());

  it('loads the adapter under the version name; loading the name again replaces its weights in place', async () => {
    const path = adapterDir(8);
    const other = adapterDir(8);
    assert.equal((await publish('run@1', path)).version, 'run@1');
    // A run re-created under its old name: the same version name, other weights.
    assert.equal((await publish('run@1', other)).version, 'run@1');
    assert.deepEqual(
      fake.lora.loads.map((l) => [l.name, l.path, l.status]),
      [
        ['run@1', path, 200],
        ['run@1', other, 200],
      ],
    );
  });

  it('a server too old for load_inplace, answering "already loaded" to a name it has, is refused: it would keep serving the old weights', async () => {
    fake.lora.inplace = false;
    const path = adapterDir(8);
    const other = adapterDir(8);
    assert.equal((await publish('run@1', path)).version, 'run@1');
    await assert.rejects(publish('run@1', other), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, 'PublishRefused');
      assert.equal(error.nonRetryable, true);
      assert.match(error.message, /does not support load_inplace/);
      assert.ok(error.message.includes(`${fake.url}/load_lora_adapter`), error.message);
      assert.ok(error.message.includes('version run@1'), error.message);
      assert.match(error.message, /has already been loaded/);
      return true;
    });
    assert.deepEqual(
      fake.lora.loads.map((l) => [l.path, l.status]),
      [
        [path, 200],
        [other, 400],
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
    assert.equal((await publish('run@2', path)).version, 'run@2');
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

  it('times the first token of the new version with the call the policy makes: a one-token chat completion of NAME@k, on a server without /v1/completions', async () => {
    fake.lora.servesOnlyLoaded = true;
    const before = Date.now();
    const published = await publish('run@1', adapterDir(8));
    const after = Date.now();
    assert.deepEqual(fake.probes, ['run@1']);
    assert.ok(
      published.firstTokenAtMs !== null && published.firstTokenAtMs >= before,
      String(published.firstTokenAtMs),
    );
    // The latency the step records: from this publish's own start to that first token, on one clock.
    const { publishMs } = published;
    assert.ok(
      typeof publishMs === 'number' && publishMs >= 0 && publishMs <= after - before,
      `publishMs ${publishMs} outside the publish's own ${after - before} ms`,
    );
    // The adapter's load alone, a part of that latency (bench:publish reports both).
    const { loadMs } = published;
    assert.ok(
      typeof loadMs === 'number' && loadMs >= 0 && loadMs <= publishMs,
      `loadMs ${loadMs} outside the publish's ${publishMs} ms`,
    );
    assert.equal(fake.count(), 0, 'the probe is not counted as a role call');
  });

  it('a 404 saying the version is not served yet leaves the publish pending (retried), and the next attempt times it', async () => {
    fake.lora.servesOnlyLoaded = true;
    const serves = fake.lora.serves.bind(fake.lora);
    // listed by /v1/models but not yet answering completions
    fake.lora.serves = (model) => model !== 'run@2' && serves(model);
    await assert.rejects(publish('run@2', adapterDir(8)), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, 'PublishPending');
      assert.equal(error.nonRetryable, false);
      assert.match(error.message, /run@2 not served yet: The model `run@2` does not exist\./);
      return true;
    });
    fake.lora.serves = serves;
    assert.notEqual((await publish('run@2', adapterDir(8))).firstTokenAtMs, null);
  });

  it('a policy server without the chat route fails the publish for good, naming the endpoint and its answer, instead of waiting', async () => {
    fake.unrouted.add('POST /v1/chat/completions');
    await assert.rejects(publish('run@1', adapterDir(8)), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, 'PublishRefused');
      assert.equal(error.nonRetryable, true);
      assert.ok(error.message.includes(`${fake.url}/chat/completions answered HTTP 404`), error.message);
      assert.ok(error.message.includes('version run@1'), error.message);
      assert.ok(error.message.endsWith('no route POST /v1/chat/completions'), error.message);
      return true;
    });
  });

  it('tells a 404 for a version not served from one for a missing route', () => {
    assert.equal(saysVersionNotServed('The model `run@3` does not exist.', 'run@3'), true);
    assert.equal(saysVersionNotServed('model not found', 'run@3'), true);
    assert.equal(saysVersionNotServed('Not Found', 'run@3'), false);
    assert.equal(saysVersionNotServed('no route POST /v1/chat/completions', 'run@3'), false);
    assert.equal(saysVersionNotServed('Cannot POST /v1/chat/completions', 'run@3'), false);
  });

  it("keeps the run's newest versions loaded and unloads the older ones; other names and a 404 on unload are left alone", async () => {
    const keep = { runName: 'run', keep: 2 };
    await publish('other@1', adapterDir(8));
    await publish('run@1', adapterDir(8), keep);
    await publish('run@2', adapterDir(8), keep);
    assert.deepEqual(fake.lora.unloads, []);
    const third = await publish('run@3', adapterDir(8), keep);
    assert.deepEqual(third.unloaded, ['run@1']);
    assert.deepEqual(fake.lora.names().sort(), ['other@1', 'run@2', 'run@3']);
    for (const step of [4, 5, 6]) await publish(`run@${step}`, adapterDir(8), keep);
    assert.deepEqual(fake.lora.names().sort(), ['other@1', 'run@5', 'run@6']);
    assert.ok(
      fake.lora.loads
        .filter((l) => l.name.startsWith('run@'))
        .every((l) => l.table.filter((n) => n.startsWith('run@')).length <= 3),
      'never more than keep + the new one loaded',
    );
    const listed = ((await (await fetch(`${fake.url}/models`)).json()) as { data: { id: string }[] }).data.map(
      (m) => m.id,
    );
    assert.deepEqual(listed.sort(), ['fake-model', 'other@1', 'run@5', 'run@6']);
  });

  it('an unload vLLM refuses is reported, not fatal; one it no longer has (404) counts as done', async () => {
    const keep = { runName: 'run', keep: 1 };
    await publish('run@1', adapterDir(8), keep);
    // unload_lora_adapter answering 500 for run@1
    const original = fake.lora.unload.bind(fake.lora);
    fake.lora.unload = (body, res, send) =>
      send(res, 500, { error: { message: 'engine busy', type: 'InternalServerError', code: 500 } });
    const second = await publish('run@2', adapterDir(8), keep);
    assert.deepEqual(second.unloaded, []);
    assert.equal(second.unloadFailures.length, 1);
    assert.match(second.unloadFailures[0] ?? '', /^run@1: HTTP 500: engine busy$/);
    fake.lora.unload = (body, res, send) =>
      send(res, 404, { error: { message: "The lora adapter 'run@1' cannot be found.", code: 404 } });
    const third = await publish('run@3', adapterDir(8), keep);
    // run@1 (404: already gone) and run@2 (404 from the same stand-in) both count as unloaded
    assert.deepEqual(third.unloaded, ['run@1', 'run@2']);
    assert.deepEqual(third.unloadFailures, []);
    fake.lora.unload = original;
  });
});

describe('which versions a publish unloads', () => {
  it("all of the run's versions but the newest `keep`, none of another run or the base model", () => {
    const loaded = ['base', 'run@1', 'run@2', 'run@3', 'run@4', 'run2@1', 'run@x', 'other@1'];
    assert.deepEqual(versionsToUnload('run', loaded, 4, 2), ['run@1', 'run@2']);
    assert.deepEqual(versionsToUnload('run', loaded, 4, 4), []);
    assert.deepEqual(versionsToUnload('run2', loaded, 1, 1), []);
    assert.equal(versionStep('run', 'run@12'), 12);
    assert.equal(versionStep('run', 'run@'), null);
    assert.equal(versionStep('ru', 'run@1'), null);
  });
});
