import assert from 'node:assert/strict';
import {
  playTurn,
  policyStep,
  simulatorStep,
  withoutPrompt,
  withPrompt,
  type TurnInput,
  type TurnPhase,
} from '../../src/core/dialogueTurn.js';
import { callSeed } from '../../src/core/seeds.js';
import { dialogueScenario, dialogueSettings, fakeDialogueCalls } from '../support/fakeDialogueCalls.js';

function turnInput(overrides: Partial<TurnInput> = {}): TurnInput {
  return {
    settings: dialogueSettings(),
    scenario: dialogueScenario(),
    systemPrompt: 'Be kind.',
    history: [{ role: 'user', content: 'My flight got cancelled. Again.' }],
    emotion: 40,
    turn: 1,
    seed: 7,
    ...overrides,
  };
}

describe('a dialogue turn', () => {
  it('asks the policy, then the simulator for its analysis and its reply, each with its own seed', async () => {
    const calls = fakeDialogueCalls({ changes: [5] });
    const phases: TurnPhase[] = [];
    const played = await playTurn(calls, turnInput(), (phase) => phases.push(phase));
    assert.deepEqual(phases, ['policy', 'analysis', 'reply']);
    assert.deepEqual(
      calls.log.map((c) => [c.role, c.seed]),
      [
        ['policy', callSeed(7, 1, 'policy')],
        ['analysis', callSeed(7, 1, 'analysis')],
        ['reply', callSeed(7, 1, 'reply')],
      ],
    );
    assert.deepEqual(calls.log[0]!.messages, [
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'My flight got cancelled. Again.' },
    ]);
    assert.equal(played.outcome, null);
    assert.equal(played.emotion, 45);
    assert.deepEqual(played.messages, [
      { role: 'assistant', content: 'assistant reply 1' },
      { role: 'user', content: 'user reply 1' },
    ]);
    const { record } = played;
    assert.equal(record.turn, 1);
    assert.equal(record.userMessage, 'My flight got cancelled. Again.');
    assert.equal(record.emotionBefore, 40);
    assert.equal(record.emotionAfter, 45);
    assert.equal(record.state, 'B');
    assert.equal(record.analysis?.analysis.emotionChange, 5);
    assert.equal(record.userReply?.text, 'user reply 1');
  });

  it('travels back from a turn activity without its prompt, and the workflow puts the same prompt back', async () => {
    const input = turnInput({
      history: [
        { role: 'user', content: 'My flight got cancelled. Again.' },
        { role: 'assistant', content: 'That sounds exhausting.' },
        { role: 'user', content: 'It is.' },
      ],
      turn: 2,
    });
    const played = await playTurn(fakeDialogueCalls({ changes: [5] }), input);
    assert.equal(played.record.promptMessages.length, 4);
    const carried = withoutPrompt(played);
    assert.deepEqual(carried.record.promptMessages, []);
    assert.deepEqual({ ...carried.record, promptMessages: played.record.promptMessages }, played.record);
    assert.deepEqual(withPrompt(carried, input), played);
    // A result recorded before results went without their prompts keeps the prompt it carries.
    const recorded = {
      ...played,
      record: { ...played.record, promptMessages: [{ role: 'user' as const, content: 'x' }] },
    };
    assert.equal(withPrompt(recorded, input), recorded);
  });

  it('ends on a malformed policy output without asking the simulator', async () => {
    const calls = fakeDialogueCalls({ malformedPolicyCalls: [1] });
    const played = await playTurn(calls, turnInput());
    assert.equal(played.outcome, 'malformed');
    assert.equal(played.emotion, 40);
    assert.deepEqual(played.messages, []);
    assert.equal(played.record.analysis, null);
    assert.deepEqual(
      calls.log.map((c) => c.role),
      ['policy'],
    );
  });

  it('ends after the analysis at the turn limit, at 100 and below 10, with no reply', async () => {
    for (const [emotion, change, turn, outcome] of [
      [40, 0, 3, 'turn-limit'],
      [95, 10, 1, 'success'],
      [12, -5, 1, 'failure'],
    ] as const) {
      const calls = fakeDialogueCalls({ changes: [change] });
      const played = await playTurn(calls, turnInput({ emotion, turn }));
      assert.equal(played.outcome, outcome);
      assert.deepEqual(played.messages, [{ role: 'assistant', content: 'assistant reply 1' }]);
      assert.equal(played.record.userReply, null);
      assert.deepEqual(
        calls.log.map((c) => c.role),
        ['policy', 'analysis'],
      );
    }
  });

  it("ends on the user's goodbye", async () => {
    const calls = fakeDialogueCalls({ replyText: () => 'Thanks, goodbye.' });
    assert.equal((await playTurn(calls, turnInput())).outcome, 'goodbye');
  });

  it('played in two halves, gives the same turn as played whole', async () => {
    const whole = await playTurn(fakeDialogueCalls({ changes: [3] }), turnInput());
    const calls = fakeDialogueCalls({ changes: [3] });
    const input = turnInput();
    const replied = await policyStep(calls, input);
    assert.equal(replied.ended, null);
    assert.equal(replied.record.analysis, null);
    assert.deepEqual(await simulatorStep(calls, input, replied.record), whole);
  });

  it('the policy half of a malformed turn is the whole turn', async () => {
    const replied = await policyStep(fakeDialogueCalls({ malformedPolicyCalls: [1] }), turnInput());
    assert.equal(replied.ended?.outcome, 'malformed');
    assert.equal(replied.ended?.record, replied.record);
  });
});
