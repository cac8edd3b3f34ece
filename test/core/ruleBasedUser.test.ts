import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { analysisMessages, SIMULATOR_TAGS } from '../../src/core/prompts/simulator.js';
import { latestReplyOf, ruleBasedEmotionChange } from '../../src/core/ruleBasedUser.js';
import { startRuleBasedUser } from '../../src/ruleuser/server.js';
import { fixtureScenario } from '../support/rolloutRig.js';

describe('the rule-based simulated user', () => {
  it('rewards shorter replies, within [-10, 10]', () => {
    assert.equal(ruleBasedEmotionChange('x'.repeat(64)), 0);
    assert.equal(ruleBasedEmotionChange('x'.repeat(34)), 10);
    assert.equal(ruleBasedEmotionChange('x'), 10);
    // the empty-reply hack is closed: nothing visible is the worst, not the best
    assert.equal(ruleBasedEmotionChange(''), -10);
    assert.equal(ruleBasedEmotionChange(' \n '), -10);
    assert.equal(ruleBasedEmotionChange('x'.repeat(70)), -2);
    assert.equal(ruleBasedEmotionChange('x'.repeat(500)), -10);
    assert.equal(Object.is(ruleBasedEmotionChange('x'.repeat(65)), -0), false);
  });

  it('reads the latest reply from the analysis prompt, in English and Chinese', () => {
    for (const id of ['test-venting-negative-baker', 'test-not-my-fault-avoidant-cyclist']) {
      const scenario = fixtureScenario(id);
      for (const language of ['en', 'zh'] as const) {
        const messages = analysisMessages(
          { ...scenario, language },
          [{ role: 'user', content: 'hi' }],
          'He said "no"\nok',
          50,
        );
        assert.equal(latestReplyOf(messages[messages.length - 1]!.content), 'He said "no"\nok');
      }
    }
    assert.equal(latestReplyOf('no literal here'), null);
  });

  it('answers over the OpenAI API: analyses as JSON, plain user messages, 400s naming the field', async () => {
    const server = await startRuleBasedUser();
    try {
      const client = new OpenAI({ baseURL: server.url, apiKey: 'none', maxRetries: 0 });
      const scenario = fixtureScenario('test-venting-negative-baker');
      const analysis = await client.chat.completions.create({
        model: 'rule-based-user',
        messages: analysisMessages(scenario, [{ role: 'user', content: 'hi' }], 'Short.', 50),
      });
      const parsed = JSON.parse(analysis.choices[0]!.message.content ?? '') as { emotionChange: number };
      assert.equal(parsed.emotionChange, 10);
      const reply = await client.chat.completions.create({
        model: 'rule-based-user',
        messages: [
          { role: 'system', content: `${SIMULATOR_TAGS.reply} be the user` },
          { role: 'user', content: 'go on' },
        ],
      });
      assert.match(reply.choices[0]!.message.content ?? '', /Keep it short/);
      assert.equal(server.analyses, 1);
      await assert.rejects(
        client.chat.completions.create({ model: 'rule-based-user', messages: [] }),
        (error: unknown) => error instanceof OpenAI.APIError && error.status === 400 && /messages/.test(error.message),
      );
    } finally {
      await server.close();
    }
  });
});
