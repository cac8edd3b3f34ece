import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { chatCompletion, type ChatRequest } from '../../src/activities/chatCompletion.js';
import { trainerRequest } from '../../src/trainer/trainerClient.js';

/** Answers every request after `holdMs`, as a trainer in a long step or a busy LLM server does. */
function slowServer(holdMs: number, body: unknown): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    const timer = setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    }, holdMs);
    res.on('close', () => clearTimeout(timer));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

const RETRY = { initialIntervalMs: 1000, backoffCoefficient: 2, maximumIntervalMs: 10_000, maximumAttempts: 1 };

/** A policy call to the server at `url` that may take `timeoutMs`. */
function policyCall(url: string, timeoutMs: number): ChatRequest {
  return {
    endpoint: {
      baseURL: `${url}/v1`,
      model: 'm',
      apiKeyEnv: 'ATTUNE_TEST_NO_KEY',
      timeoutMs,
      temperature: 0,
      maxTokens: 8,
      taskQueue: 'q',
      retry: RETRY,
    },
    role: 'policy',
    messages: [{ role: 'user', content: 'hi' }],
  };
}

const COMPLETION = {
  id: 'c1',
  object: 'chat.completion',
  created: 0,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};

// Node's fetch cuts a request whose headers take 300 s, whatever the caller's deadline. The process's
// default dispatcher is given a 1 s cut here, so a 2 s answer shows whether a call depends on it.
describe("Attune's HTTP calls keep their own deadline, not the fetch dispatcher's header and body cut-offs", () => {
  let previous: Dispatcher;
  let slow: { server: Server; url: string } | undefined;
  before(() => {
    previous = getGlobalDispatcher();
    setGlobalDispatcher(new Agent({ headersTimeout: 1000, bodyTimeout: 1000 }));
  });
  after(() => setGlobalDispatcher(previous));
  afterEach(async () => {
    slow?.server.closeAllConnections();
    await new Promise((resolve) => slow?.server.close(resolve));
    slow = undefined;
  });

  it('a trainer request answered after the cut-off (an optimizer step of many minutes) succeeds', async () => {
    slow = await slowServer(2000, { step: 1 });
    const answer = await trainerRequest(
      { url: slow.url, tokenEnv: 'ATTUNE_TEST_NO_TOKEN' },
      'POST',
      '/v1/runs/r/steps',
      {},
      30_000,
    );
    assert.deepEqual(answer, { status: 200, json: { step: 1 } });
  });

  it('an LLM call answered after the cut-off, within its timeoutMs, succeeds', async () => {
    slow = await slowServer(2000, COMPLETION);
    const response = await chatCompletion(policyCall(slow.url, 30_000));
    assert.equal(response.content, 'hello');
  });

  it('its own deadline still ends a call: timeoutMs 500 against a 2 s answer is a timeout naming 500 ms', async () => {
    slow = await slowServer(2000, COMPLETION);
    await assert.rejects(chatCompletion(policyCall(slow.url, 500)), /policy endpoint .* timed out after 500 ms/);
  });
});
