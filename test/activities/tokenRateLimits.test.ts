import assert from 'node:assert/strict';
import { generatePolicyTurn } from '../../src/activities/policy.js';
import { configureTokenRateLimits } from '../../src/activities/tokenRateLimits.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { createRolloutRig, fixtureScenario, testConfig, type RolloutRig } from '../support/rolloutRig.js';

describe('tokens-per-minute limits on LLM calls', function () {
  this.timeout(120_000);
  let fake: FakeOpenAIServer | undefined;
  let rig: RolloutRig | undefined;
  afterEach(async () => {
    configureTokenRateLimits({ policy: {}, simulator: {} });
    await fake?.close();
    await rig?.close();
    fake = undefined;
    rig = undefined;
  });

  it('a low budget makes calls wait: each arrives after its share of the minute, and reports its wait', async () => {
    fake = await FakeOpenAIServer.start();
    // 60,000 tokens a minute = 1,000 a second; each call is charged 400 chars / 4 + 400 = 500 tokens.
    const endpoint = { ...rolloutSettingsFromConfig(testConfig(fake.url)).policy, maxTokens: 400 };
    configureTokenRateLimits({ policy: { tokensPerMinute: 60_000 } });
    const startedAt = Date.now();
    const results = await Promise.all(
      [0, 1, 2].map((i) =>
        generatePolicyTurn({
          endpoint,
          messages: [{ role: 'user', content: `${i}`.repeat(400) }],
          think: false,
          seed: i,
        }),
      ),
    );
    const arrivals = fake.calls.map((c) => c.arrivedAtMs - startedAt).sort((a, b) => a - b);
    assert.equal(arrivals.length, 3);
    // The budget starts empty, so call k (1-based) starts after k x 0.5 s; timers fire late, never early.
    arrivals.forEach((ms, k) => assert.ok(ms >= 500 * (k + 1) - 5, `call ${k + 1} arrived after ${ms} ms`));
    const waits = results.map((r) => r.usage.rateLimitWaitMs ?? 0).sort((a, b) => a - b);
    waits.forEach((ms, k) => assert.ok(ms >= 500 * (k + 1) - 5, `call ${k + 1} reported a wait of ${ms} ms`));
  });

  it('without a budget a call neither waits nor reports a wait', async () => {
    fake = await FakeOpenAIServer.start();
    const endpoint = rolloutSettingsFromConfig(testConfig(fake.url)).policy;
    configureTokenRateLimits({ policy: {} });
    const result = await generatePolicyTurn({
      endpoint,
      messages: [{ role: 'user', content: 'hi' }],
      think: false,
      seed: 1,
    });
    assert.equal(result.usage.rateLimitWaitMs, undefined);
  });

  it("a dialogue's summary counts its calls' waits per endpoint (what the step metrics and status add up)", async () => {
    // The budget earns 2,500 tokens a second and the first policy call is charged about 20,000
    // (maxTokens 20,000), so it waits up to 8 s after the budget was emptied: longer than the call's
    // 3 s HTTP timeout, which must bound the call, not its wait for the budget.
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 3 }) },
      set: ['policy.tokensPerMinute=150000', 'policy.maxTokens=20000'],
    });
    await rig.startWorkers();
    // The workers' budget filled while they started (by 8 s of a slow start it covers the call):
    // empty it now, as a worker that has just started has it, so the wait does not hang on start-up time.
    configureTokenRateLimits({ policy: {} });
    configureTokenRateLimits({ policy: { tokensPerMinute: 150_000 } });
    const summary = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 1, { maxTurns: 2 });
    const waits = summary.tokens.rateLimitWaits;
    assert.ok(waits, JSON.stringify(summary.tokens));
    assert.ok(waits.policy.waits >= 1 && waits.policy.waitMs > 1000, JSON.stringify(waits));
    assert.deepEqual(waits.simulator, { waits: 0, waitMs: 0 }, 'the simulator has no budget here');
  });
});
