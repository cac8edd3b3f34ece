import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { analysisMessages } from '../../src/core/prompts/simulator.js';
import { ruleBasedEmotionChange } from '../../src/core/ruleBasedUser.js';
import { turnDifferentiatedEmotionChange, turnOpposedEmotionChange } from '../../src/core/turnDifferentiatedUser.js';
import { startRuleBasedUser } from '../../src/ruleuser/server.js';
import { fixtureScenario } from '../support/rolloutRig.js';

describe('the turn-differentiated rule-based user', () => {
  it('scores the same reply differently before and after the user feels heard', () => {
    const short = 'x'.repeat(10);
    const long = 'x'.repeat(200);
    // before: brevity pays, length costs, as the plain rule
    assert.equal(turnDifferentiatedEmotionChange(short, 1), ruleBasedEmotionChange(short));
    assert.equal(turnDifferentiatedEmotionChange(short, 1), 10);
    assert.equal(turnDifferentiatedEmotionChange(long, 1), -10);
    // after: length is neutral
    assert.equal(turnDifferentiatedEmotionChange(short, 2), 0);
    assert.equal(turnDifferentiatedEmotionChange(long, 2), 0);
    assert.equal(turnDifferentiatedEmotionChange(long, 3, { targetChars: 64, charsPerPoint: 3, heardAfterTurn: 2 }), 0);
    assert.equal(
      turnDifferentiatedEmotionChange(long, 2, { targetChars: 64, charsPerPoint: 3, heardAfterTurn: 2 }),
      -10,
    );
  });

  it('keeps the empty reply the worst in every turn', () => {
    for (const turn of [1, 2, 5]) assert.equal(turnDifferentiatedEmotionChange(' ', turn), -10);
  });
});

describe('the turn-opposed rule-based user', () => {
  it('pays for brevity in turn 1 and for length, by as much, once the user feels heard', () => {
    const short = 'x'.repeat(10);
    const long = 'x'.repeat(200);
    const target = 'x'.repeat(64);
    assert.equal(turnOpposedEmotionChange(short, 1), 10);
    assert.equal(turnOpposedEmotionChange(long, 1), -10);
    assert.equal(turnOpposedEmotionChange(short, 2), -10);
    assert.equal(turnOpposedEmotionChange(long, 2), 10);
    assert.equal(turnOpposedEmotionChange('x'.repeat(70), 2), -ruleBasedEmotionChange('x'.repeat(70)));
    assert.ok(Object.is(turnOpposedEmotionChange(target, 2), 0), 'no -0');
    assert.equal(turnOpposedEmotionChange(long, 2, { targetChars: 64, charsPerPoint: 3, heardAfterTurn: 2 }), -10);
  });

  it('keeps the empty reply the worst in every turn', () => {
    for (const turn of [1, 2, 5]) assert.equal(turnOpposedEmotionChange('  ', turn), -10);
  });
});

describe('the turn-differentiated and turn-opposed tasks over the OpenAI API', () => {
  for (const [task, turn2] of [
    ['turn-differentiated', 0],
    ['turn-opposed', 10],
  ] as const) {
    it(`${task}: a long reply costs in turn 1 and scores ${turn2} in turn 2`, async () => {
      const server = await startRuleBasedUser({ task });
      try {
        const client = new OpenAI({ baseURL: server.url, apiKey: 'none', maxRetries: 0 });
        const scenario = fixtureScenario('test-venting-negative-baker');
        const long = 'x'.repeat(200);
        const score = async (history: { role: 'user' | 'assistant'; content: string }[]) => {
          const res = await client.chat.completions.create({
            model: 'rule-based-user',
            messages: analysisMessages(scenario, history, long, 50),
          });
          return (JSON.parse(res.choices[0]!.message.content!) as { emotionChange: number }).emotionChange;
        };
        assert.equal(await score([{ role: 'user', content: 'hi' }]), -10);
        assert.equal(
          await score([
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'I hear you.' },
            { role: 'user', content: 'thanks' },
          ]),
          turn2,
        );
      } finally {
        await server.close();
      }
    });
  }
});
