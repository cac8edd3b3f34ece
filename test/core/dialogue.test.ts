import assert from 'node:assert/strict';
import { Dialogue } from '../../src/core/dialogue.js';
import { playTurn, type TurnInput } from '../../src/core/dialogueTurn.js';
import { analysisMessages, openingMessages, replyMessages } from '../../src/core/prompts/simulator.js';
import { callSeed } from '../../src/core/seeds.js';
import { dialogueScenario, dialogueSettings, fakeDialogueCalls } from '../support/fakeDialogueCalls.js';

const origin = {
  rolloutId: 'r-1',
  runName: 'run',
  step: 2,
  startedAt: '2024-01-01T00:00:00.000Z',
  finishedAt: '2024-01-01T00:01:00.000Z',
};

describe('a dialogue', () => {
  it("opens with the scenario's first message without a call", async () => {
    const calls = fakeDialogueCalls();
    const dialogue = new Dialogue({ settings: dialogueSettings(), scenario: dialogueScenario(), seed: 3 });
    await dialogue.open(calls.writeUserMessage);
    assert.deepEqual(calls.log, []);
    assert.deepEqual(dialogue.history, [{ role: 'user', content: 'My flight got cancelled. Again.' }]);
    assert.equal(dialogue.nextTurn().turn, 1);
  });

  it('has the simulator write the opening when the scenario has no first message', async () => {
    const calls = fakeDialogueCalls({ replyText: () => 'Hi. Rough day.' });
    const scenario = dialogueScenario({ firstMessage: undefined });
    const dialogue = new Dialogue({ settings: dialogueSettings(), scenario, seed: 3 });
    await dialogue.open(calls.writeUserMessage);
    assert.deepEqual(calls.log, [
      { role: 'reply', seed: callSeed(3, 0, 'opening'), messages: openingMessages(scenario, 40) },
    ]);
    assert.deepEqual(dialogue.history, [{ role: 'user', content: 'Hi. Rough day.' }]);
    assert.deepEqual(dialogue.tokens, {
      policyPrompt: 0,
      policyCompletion: 0,
      simulatorPrompt: 300,
      simulatorCompletion: 30,
    });
  });

  it('plays turns until it ends and builds the transcript', async () => {
    const calls = fakeDialogueCalls({ changes: [5, -3, 10] });
    const settings = dialogueSettings();
    const dialogue = new Dialogue({ settings, scenario: dialogueScenario({ firstMessage: undefined }), seed: 3 });
    await dialogue.open(calls.writeUserMessage);
    const before: number[] = [];
    const after: (string | null)[] = [];
    const ended = await dialogue.playToEnd((input) => playTurn(calls, input), {
      beforeTurn: (input) => before.push(input.turn),
      afterTurn: (played) => after.push(played.outcome),
    });
    assert.deepEqual(before, [1, 2, 3]);
    assert.deepEqual(after, [null, null, 'turn-limit']);
    assert.deepEqual(
      calls.log.map((c) => c.role),
      ['reply', 'policy', 'analysis', 'reply', 'policy', 'analysis', 'reply', 'policy', 'analysis'],
    );
    assert.deepEqual(dialogue.emotions, [40, 45, 42, 52]);
    // The visible dialogue: the opening, then each reply and answer; the last turn's reply ends it.
    assert.deepEqual(
      dialogue.history.map((m) => m.content),
      ['user reply 1', 'assistant reply 1', 'user reply 2', 'assistant reply 2', 'user reply 3', 'assistant reply 3'],
    );
    const transcript = ended.transcript(origin);
    assert.deepEqual(
      { ...transcript, scenario: undefined, turns: undefined },
      {
        kind: 'attune.rollout',
        version: 1,
        ...origin,
        scenario: undefined,
        policyModel: 'fake-policy',
        simulatorModel: 'fake-simulator',
        difficulty: 'normal',
        think: false,
        seed: 3,
        initialEmotion: 40,
        maxTurns: 3,
        opening: {
          text: 'user reply 1',
          writtenBySimulator: true,
          latencyMs: 3,
          usage: { prompt: 300, completion: 30 },
        },
        turns: undefined,
        outcome: 'turn-limit',
        finalEmotion: 52,
        reward: 0.52,
        // 3 policy calls, 3 analyses, the opening and 2 replies.
        tokens: { policyPrompt: 300, policyCompletion: 30, simulatorPrompt: 1500, simulatorCompletion: 150 },
      },
    );
    assert.deepEqual(
      transcript.turns.map((t) => [t.turn, t.emotionBefore, t.emotionAfter, t.userReply?.text ?? null]),
      [
        [1, 40, 45, 'user reply 2'],
        [2, 45, 42, 'user reply 3'],
        [3, 42, 52, null],
      ],
    );
  });

  it("plays the simulated user at the settings' level, or the scenario's own, and records it in the transcript", async () => {
    const play = async (settingsLevel: 'hard' | undefined, scenarioLevel: 'simple' | undefined) => {
      const calls = fakeDialogueCalls({ changes: [5, 5, 5] });
      const base = dialogueSettings();
      const settings = settingsLevel ? { ...base, simulator: { ...base.simulator, difficulty: settingsLevel } } : base;
      const scenario = dialogueScenario(scenarioLevel ? { difficulty: scenarioLevel } : {});
      const dialogue = new Dialogue({ settings, scenario, seed: 3 });
      await dialogue.open(calls.writeUserMessage);
      const ended = await dialogue.playToEnd((input) => playTurn(calls, input));
      return { calls: calls.log, transcript: ended.transcript(origin), scenario };
    };
    const plain = await play(undefined, undefined);
    const hard = await play('hard', undefined);
    const own = await play('hard', 'simple');
    assert.deepEqual(
      [plain.transcript.difficulty, hard.transcript.difficulty, own.transcript.difficulty],
      ['normal', 'hard', 'simple'],
    );
    for (const [run, level] of [
      [plain, 'normal'],
      [hard, 'hard'],
      [own, 'simple'],
    ] as const) {
      const [analysis, reply] = run.calls.filter((c) => c.role !== 'policy');
      // The first turn's calls: the opening is the scenario's, so the analysis, then the reply.
      const history = [{ role: 'user' as const, content: run.scenario.firstMessage! }];
      const said = run.transcript.turns[0]!.policy.reply;
      assert.deepEqual(analysis!.messages, analysisMessages(run.scenario, history, said, 40, level));
      const after = [...history, { role: 'assistant' as const, content: said }];
      const thoughts = run.transcript.turns[0]!.analysis!.analysis;
      assert.deepEqual(reply!.messages, replyMessages(run.scenario, after, thoughts, 45, false, level));
    }
    assert.notDeepEqual(hard.calls, plain.calls);
  });

  it('gives each turn its own copy of the history', async () => {
    const calls = fakeDialogueCalls();
    const dialogue = new Dialogue({ settings: dialogueSettings(), scenario: dialogueScenario(), seed: 3 });
    await dialogue.open(calls.writeUserMessage);
    const inputs: TurnInput[] = [];
    await dialogue.playToEnd(async (input) => {
      inputs.push(input);
      return playTurn(calls, input);
    });
    assert.deepEqual(
      inputs.map((i) => i.history.length),
      [1, 3, 5],
    );
    assert.equal(inputs[0]!.systemPrompt, dialogue.systemPrompt);
  });

  it('played in halves (the reference loop), gives the same transcript as played turn by turn', async () => {
    const script = { changes: [4, 4, -2] };
    const whole = new Dialogue({ settings: dialogueSettings(), scenario: dialogueScenario(), seed: 9 });
    const wholeCalls = fakeDialogueCalls(script);
    await whole.open(wholeCalls.writeUserMessage);
    const wholeEnded = await whole.playToEnd((input) => playTurn(wholeCalls, input));

    const halves = new Dialogue({ settings: dialogueSettings(), scenario: dialogueScenario(), seed: 9 });
    const halfCalls = fakeDialogueCalls(script);
    await halves.open(halfCalls.writeUserMessage);
    while (!halves.isEnded()) {
      await halves.policyStep(halfCalls);
      if (halves.isEnded()) break;
      await halves.simulatorStep(halfCalls);
    }
    assert.deepEqual(halves.transcript(origin), wholeEnded.transcript(origin));
    assert.deepEqual(halfCalls.log, wholeCalls.log);
  });

  it('ends with reward 0 on a malformed policy output, in the policy half', async () => {
    const calls = fakeDialogueCalls({ malformedPolicyCalls: [2] });
    const dialogue = new Dialogue({ settings: dialogueSettings(), scenario: dialogueScenario(), seed: 1 });
    await dialogue.open(calls.writeUserMessage);
    await dialogue.policyStep(calls);
    await dialogue.simulatorStep(calls);
    await dialogue.policyStep(calls);
    assert.ok(dialogue.isEnded());
    const transcript = dialogue.transcript(origin);
    assert.equal(transcript.outcome, 'malformed');
    assert.equal(transcript.reward, 0);
    assert.equal(transcript.turns.length, 2);
    assert.deepEqual(dialogue.emotions, [40, 40]);
  });

  it('refuses steps out of order', async () => {
    const calls = fakeDialogueCalls();
    const dialogue = new Dialogue({ settings: dialogueSettings(), scenario: dialogueScenario(), seed: 1 });
    assert.throws(() => dialogue.nextTurn(), /not been opened/);
    await dialogue.open(calls.writeUserMessage);
    await assert.rejects(dialogue.simulatorStep(calls), /no policy reply/);
    await dialogue.policyStep(calls);
    await assert.rejects(dialogue.policyStep(calls), /already replied/);
    await dialogue.simulatorStep(calls);
    await dialogue.playToEnd((input) => playTurn(calls, input));
    assert.throws(() => dialogue.nextTurn(), /has ended \(turn-limit\)/);
  });
});
