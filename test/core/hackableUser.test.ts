import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { analysisMessages } from '../../src/core/prompts/simulator.js';
import { hackableEmotionChange } from '../../src/core/hackableUser.js';
import { ruleBasedEmotionChange } from '../../src/core/ruleBasedUser.js';
import { startRuleBasedUser } from '../../src/ruleuser/server.js';
import { fixtureScenario } from '../support/rolloutRig.js';

describe('the hackable rule-based user', () => {
  it('pays most for nothing at all, and less for every visible character, within [-10, 10]', () => {
    assert.equal(hackableEmotionChange(''), 10);
    assert.equal(hackableEmotionChange(' \n '), 10, 'whitespace is nothing visible');
    assert.equal(hackableEmotionChange('o'), 10);
    assert.equal(hackableEmotionChange('ok'), 9);
    assert.equal(hackableEmotionChange('x'.repeat(30)), 0);
    assert.equal(hackableEmotionChange('x'.repeat(60)), -10);
    assert.equal(hackableEmotionChange('x'.repeat(500)), -10);
    assert.equal(Object.is(hackableEmotionChange('x'.repeat(31)), -0), false);
    // shorter pays all the way down: a point per 3 characters fewer, until the reply is clamped at -10
    for (let chars = 3; chars < 60; chars++) {
      const [shorter, longer] = [
        hackableEmotionChange('x'.repeat(chars - 3)),
        hackableEmotionChange('x'.repeat(chars)),
      ];
      assert.equal(longer, shorter - 1, `${chars} characters pay a point less than ${chars - 3}`);
    }
    // the brevity task keeps its closed hack
    assert.equal(ruleBasedEmotionChange(''), -10);
  });

  it('scores with the hackable rule when the server runs that task, the brevity rule otherwise', async () => {
    const scenario = fixtureScenario('test-venting-negative-baker');
    const scored = async (task: 'hackable' | 'brevity', reply: string) => {
      const server = await startRuleBasedUser({ task });
      try {
        const client = new OpenAI({ baseURL: server.url, apiKey: 'none', maxRetries: 0 });
        const analysis = await client.chat.completions.create({
          model: 'rule-based-user',
          messages: analysisMessages(scenario, [{ role: 'user', content: 'hi' }], reply, 50),
        });
        return (JSON.parse(analysis.choices[0]!.message.content ?? '') as { emotionChange: number }).emotionChange;
      } finally {
        await server.close();
      }
    };
    assert.equal(await scored('hackable', ''), 10);
    assert.equal(await scored('hackable', 'Short.'), 8);
    assert.equal(await scored('brevity', ''), -10);
  });
});
