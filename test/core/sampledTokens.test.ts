import assert from 'node:assert/strict';
import { sampledTokensOf } from '../../src/core/sampledTokens.js';
import { samplesFromTranscript } from '../../src/core/training/samples.js';
import type { PolicyTurnResult, Transcript } from '../../src/core/transcript.js';

const entry = (token: string, logprob: number) => ({ token, logprob, bytes: [], top_logprobs: [] });

describe('sampled tokens from a chat completion choice', () => {
  it("reads vLLM's token_id:N tokens and their log-probs", () => {
    const choice = { logprobs: { content: [entry('token_id:12', -0.5), entry('token_id:0', -1.25)] } };
    assert.deepEqual(sampledTokensOf(choice), { tokenIds: [12, 0], logprobs: [-0.5, -1.25] });
    assert.deepEqual(sampledTokensOf({ ...choice, token_ids: [12, 0] }), {
      tokenIds: [12, 0],
      logprobs: [-0.5, -1.25],
    });
  });

  it('gives null when an endpoint ignored the request or answered with text tokens', () => {
    assert.equal(sampledTokensOf({ logprobs: null }), null);
    assert.equal(sampledTokensOf({}), null);
    assert.equal(sampledTokensOf({ logprobs: { content: [] } }), null);
    assert.equal(sampledTokensOf({ logprobs: { content: [entry('Hello', -0.1)] } }), null);
    assert.equal(sampledTokensOf({ logprobs: { content: [entry('token_id:3', Number.NaN)] } }), null);
    assert.equal(sampledTokensOf({ logprobs: { content: [entry('token_id:-3', -1)] } }), null);
    const disagreeing = { logprobs: { content: [entry('token_id:3', -1)] }, token_ids: [4] };
    assert.equal(sampledTokensOf(disagreeing), null);
  });
});

describe('optimizer samples carry the sampled ids', () => {
  const policy = (extra: Partial<PolicyTurnResult>): PolicyTurnResult => ({
    raw: 'hi',
    reply: 'hi',
    thinking: null,
    malformed: false,
    model: 'm',
    latencyMs: 1,
    usage: { prompt: 1, completion: 1 },
    ...extra,
  });
  const transcript = (policies: PolicyTurnResult[]) =>
    ({
      rolloutId: 'd1',
      reward: 0.5,
      turns: policies.map((p, i) => ({ turn: i + 1, promptMessages: [{ role: 'user', content: 'x' }], policy: p })),
    }) as unknown as Transcript;

  it('passes ids and log-probs of sampled turns through, and leaves re-tokenised and old turns without', () => {
    const samples = samplesFromTranscript(
      transcript([
        policy({ tokens: 'sampled', tokenIds: [5, 6], logprobs: [-1, -2] }),
        policy({ tokens: 'retokenized' }),
        policy({}),
      ]),
      'g',
    );
    assert.deepEqual(samples[0]?.completion_ids, [5, 6]);
    assert.deepEqual(samples[0]?.completion_logprobs, [-1, -2]);
    for (const s of samples.slice(1)) {
      assert.equal('completion_ids' in s, false);
      assert.equal('completion_logprobs' in s, false);
    }
  });
});
