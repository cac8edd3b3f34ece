import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generatePolicyTurn } from '../../src/activities/policy.js';
import { policyLogprobs, rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { testConfig } from '../support/rolloutRig.js';

/** A chat endpoint that answers 400 to a request asking for logprobs, as some providers do; records the bodies. */
async function logprobsRefusingServer(): Promise<{ url: string; bodies: Record<string, unknown>[]; server: Server }> {
  const bodies: Record<string, unknown>[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      bodies.push(body);
      res.setHeader('content-type', 'application/json');
      if (body.logprobs !== undefined) {
        res.statusCode = 400;
        res.end(JSON.stringify({ error: { message: 'logprobs are not supported', type: 'invalid_request_error' } }));
        return;
      }
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 0,
          model: 'refusing',
          choices: [{ index: 0, message: { role: 'assistant', content: 'I hear you.' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, bodies, server };
}

describe('policy logprobs: asked only where configured, and a refusing or ignoring endpoint falls back', () => {
  let fake: FakeOpenAIServer | undefined;
  let refusing: Server | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
    refusing?.close();
    refusing = undefined;
  });

  it('auto: on for the trainer-served policy and vLLM publishing, off elsewhere; on/off win', () => {
    const url = 'http://127.0.0.1:9/v1';
    assert.equal(policyLogprobs(testConfig(url)), false);
    assert.equal(policyLogprobs(testConfig(url, ['trainer.url=http://127.0.0.1:9'])), true);
    assert.equal(policyLogprobs(testConfig(url, ['training.publish.mode=vllm', 'training.lora.r=8'])), true);
    assert.equal(policyLogprobs(testConfig(url, ['policy.logprobs=on'])), true);
    assert.equal(
      policyLogprobs(testConfig(url, ['training.publish.mode=vllm', 'training.lora.r=8', 'policy.logprobs=off'])),
      false,
    );
    assert.equal(rolloutSettingsFromConfig(testConfig(url)).policy.logprobs, undefined, 'absent when off');
    assert.equal(rolloutSettingsFromConfig(testConfig(url, ['policy.logprobs=on'])).policy.logprobs, true);
    assert.throws(() => testConfig(url, ['policy.logprobs=maybe']), /policy\.logprobs/);
  });

  it('an endpoint that ignores logprobs: the turn is marked re-tokenised, without ids', async () => {
    fake = await FakeOpenAIServer.start();
    const endpoint = rolloutSettingsFromConfig(testConfig(fake.url, ['policy.logprobs=on'])).policy;
    const result = await generatePolicyTurn({
      endpoint,
      messages: [{ role: 'user', content: 'hi' }],
      think: false,
      seed: 1,
    });
    assert.equal(result.tokens, 'retokenized');
    assert.equal(result.tokenIds, undefined);
    assert.equal(result.logprobs, undefined);
  });

  it('an endpoint that refuses logprobs (400): asked again without them, marked re-tokenised', async () => {
    const endpointServer = await logprobsRefusingServer();
    refusing = endpointServer.server;
    const endpoint = rolloutSettingsFromConfig(testConfig(endpointServer.url, ['policy.logprobs=on'])).policy;
    const result = await generatePolicyTurn({
      endpoint,
      messages: [{ role: 'user', content: 'hi' }],
      think: false,
      seed: 1,
    });
    assert.equal(result.raw, 'I hear you.');
    assert.equal(result.tokens, 'retokenized');
    assert.equal(endpointServer.bodies.length, 2);
    assert.equal(endpointServer.bodies[0]?.logprobs, true);
    assert.equal(endpointServer.bodies[0]?.return_tokens_as_token_ids, true);
    assert.equal(endpointServer.bodies[1]?.logprobs, undefined);
  });

  it('logprobs off: not asked for, and the turn is marked re-tokenised', async () => {
    const endpointServer = await logprobsRefusingServer();
    refusing = endpointServer.server;
    const endpoint = rolloutSettingsFromConfig(testConfig(endpointServer.url)).policy;
    const result = await generatePolicyTurn({
      endpoint,
      messages: [{ role: 'user', content: 'hi' }],
      think: false,
      seed: 1,
    });
    assert.equal(result.tokens, 'retokenized');
    assert.equal(endpointServer.bodies.length, 1);
  });
});
