import assert from 'node:assert/strict';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmPayloadCodec } from '../../src/codec/aesGcmCodec.js';
import { loadKeyRing } from '../../src/codec/keys.js';
import { payloadFromJson, payloadToJson } from '../../src/codec/payloadJson.js';
import { LOCAL_UI_ORIGINS, startCodecServer, type RunningCodecServer } from '../../src/codec/server.js';
import { createLogger } from '../../src/log.js';
import type { RolloutInput } from '../../src/workflows/rollout.js';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { attune } from '../cli/attuneProcess.js';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { converterWith, writeKeysFile } from './keyFiles.js';

const TOKEN = 'codec-test-token';
const UI = 'http://localhost:8233';
const quiet = createLogger({}, 'error');

describe('attune codec server', function () {
  this.timeout(120_000);
  let server: RunningCodecServer;
  let rig: RolloutRig | undefined;
  const keysFile = writeKeysFile(['k1']);
  const codec = new AesGcmPayloadCodec(loadKeyRing(keysFile));

  before(async () => {
    server = await startCodecServer({
      codec,
      host: '127.0.0.1',
      port: 0,
      corsOrigins: LOCAL_UI_ORIGINS,
      token: TOKEN,
      log: quiet,
    });
  });
  after(async () => {
    await server.close();
  });
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  /** A request as the Temporal UI sends it. */
  const call = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Namespace': 'default',
        Origin: UI,
        Authorization: `Bearer ${TOKEN}`,
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('decodes what a worker encoded (a rollout input from a real history)', async () => {
    rig = await createRolloutRig({ dataConverter: converterWith(['k1']) });
    await rig.startWorkers();
    const scenario = fixtureScenario('test-venting-negative-baker');
    const id = `codec-server-${Date.now()}`;
    await rig.runRollout(scenario, 1, { maxTurns: 1 }, id);
    const history = await rig.client.workflow.getHandle(id).fetchHistory();
    const stored = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
    assert.equal(Buffer.from(stored[0]?.metadata?.encoding ?? []).toString(), 'binary/encrypted');

    const response = await call('/decode', { payloads: stored.map(payloadToJson) });
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal(response.headers.get('access-control-allow-origin'), UI);
    const body = (await response.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    const input = defaultPayloadConverter.fromPayload<RolloutInput>(payloadFromJson(body.payloads[0]!));
    assert.equal(input.scenario?.hiddenIntention, scenario.hiddenIntention);
  });

  it('encodes, under any path prefix, what the codec decodes', async () => {
    const plain = payloadToJson(defaultPayloadConverter.toPayload({ reply: 'one bad day' }));
    const response = await call('/namespaces/default/encode', { payloads: [plain] });
    assert.equal(response.status, 200);
    const { payloads } = (await response.json()) as { payloads: Parameters<typeof payloadFromJson>[0][] };
    assert.equal(Buffer.from(payloads[0]!.metadata!.encoding!, 'base64').toString(), 'binary/encrypted');
    const [decoded] = await codec.decode([payloadFromJson(payloads[0]!)]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(decoded!), { reply: 'one bad day' });
  });

  it('rejects a missing or wrong token with 401, readable by the UI', async () => {
    for (const authorization of ['', 'Bearer wrong', TOKEN]) {
      const response = await call('/decode', { payloads: [] }, { Authorization: authorization });
      assert.equal(response.status, 401, authorization);
      assert.equal(response.headers.get('access-control-allow-origin'), UI);
      assert.match(response.headers.get('www-authenticate') ?? '', /Bearer/);
    }
  });

  it("answers the UI's CORS preflight, and refuses other origins", async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/decode`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'authorization,content-type,x-namespace',
        },
      });
    for (const origin of LOCAL_UI_ORIGINS) {
      const ok = await preflight(origin);
      assert.equal(ok.status, 204);
      assert.equal(ok.headers.get('access-control-allow-origin'), origin);
      assert.equal(ok.headers.get('access-control-allow-credentials'), 'true');
      assert.match(ok.headers.get('access-control-allow-methods') ?? '', /POST/);
      const allowed = (ok.headers.get('access-control-allow-headers') ?? '').toLowerCase();
      for (const h of ['authorization', 'content-type', 'x-namespace']) assert.ok(allowed.includes(h), h);
    }
    const evil = await preflight('http://evil.example');
    assert.equal(evil.status, 403);
    assert.equal(evil.headers.get('access-control-allow-origin'), null);
    assert.equal((await call('/decode', { payloads: [] }, { Origin: 'http://evil.example' })).status, 403);
  });

  it('rejects bad bodies and undecodable payloads with 400 naming the endpoint and the key id', async () => {
    const notJson = await call('/decode', '{"payloads": [');
    assert.equal(notJson.status, 400);
    assert.match(await notJson.text(), /POST \/decode: the body is not JSON/);
    const badShape = await call('/decode', { payloads: [{ data: 'not base64!' }] });
    assert.equal(badShape.status, 400);
    assert.match(await badShape.text(), /POST \/decode: .*payloads\.0\.data: not base64/);
    const [foreign] = await new AesGcmPayloadCodec(loadKeyRing(writeKeysFile(['k9']))).encode([
      defaultPayloadConverter.toPayload('x'),
    ]);
    const unknownKey = await call('/decode', { payloads: [payloadToJson(foreign!)] });
    assert.equal(unknownKey.status, 400);
    assert.match(await unknownKey.text(), /key id \\"k9\\"/);
    assert.equal((await call('/other', { payloads: [] })).status, 404);
    assert.equal((await fetch(`${server.url}/decode`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status, 405);
  });

  it('runs as `attune codec-server`, with --help, and refuses a public interface without a token', async () => {
    const help = await attune(['codec-server', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--cors-origin/);
    const noKeys = await attune(['codec-server'], { ATTUNE_CODEC_KEYS_FILE: '' });
    assert.equal(noKeys.code, 2);
    assert.match(noKeys.stderr, /ATTUNE_CODEC_KEYS_FILE is not set/);
    const open = await attune(['codec-server', '--host', '0.0.0.0'], {
      ATTUNE_CODEC_KEYS_FILE: keysFile,
      ATTUNE_CODEC_SERVER_TOKEN: '',
    });
    assert.equal(open.code, 2);
    assert.match(open.stderr, /ATTUNE_CODEC_SERVER_TOKEN/);

    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'attune.js'), 'codec-server', '--port', '0'], {
      env: { ...process.env, ATTUNE_CODEC_KEYS_FILE: keysFile },
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    let url: string | undefined;
    for (let i = 0; i < 600 && !url && child.exitCode === null; i++) {
      url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
      if (!url) await new Promise((r) => setTimeout(r, 100));
    }
    try {
      assert.ok(url, `it printed its address: ${stdout}`);
      const [sealed] = await codec.encode([defaultPayloadConverter.toPayload('hello')]);
      const response = await fetch(`${url}/decode`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ payloads: [payloadToJson(sealed!)] }),
      });
      assert.equal(response.status, 200);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
  });
});
