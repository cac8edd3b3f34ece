import assert from 'node:assert/strict';
import { dialogueDifficulty, difficultyText, withDifficulty } from '../../src/core/difficulty.js';
import {
  evaluationManifest,
  isEnvironmentField,
  manifestFieldDifferences,
  rewardEnvironment,
} from '../../src/core/evaluationManifest.js';
import { analysisMessages, replyMessages } from '../../src/core/prompts/simulator.js';
import { simulatorPromptHash } from '../../src/core/prompts/simulatorPromptHash.js';
import type { Scenario } from '../../src/core/scenario.js';
import { scenarioSchema } from '../../src/core/scenario.js';
import type { ChatMessage } from '../../src/core/transcript.js';
import { requireScenarioLibrary } from '../../src/scenarios/library.js';
import { dialogueSettings } from '../support/fakeDialogueCalls.js';

/** The prompt hash every evaluation recorded before levels existed: normal's prompts are those, byte for byte. */
const NORMAL_PROMPT_HASH = 'b7a57901';

const english = requireScenarioLibrary('scenarios/eval')[0]!;
const chinese: Scenario = { ...english, language: 'zh' };
const history: ChatMessage[] = [
  { role: 'user', content: 'My week was awful.' },
  { role: 'assistant', content: 'That sounds hard.' },
];
const analysis = { assistantIntent: 'comfort', goalFit: 'partly', innerThoughts: 'meh', emotionChange: 1 };
const system = (messages: ChatMessage[]) => messages[0]!.content;
const hasChinese = (text: string) => /[\u4e00-\u9fff]/.test(text);

/** What `longer` adds to `shorter`: the text between their common start and common end. */
function added(shorter: string, longer: string): string {
  let start = 0;
  while (start < shorter.length && shorter[start] === longer[start]) start++;
  let end = 0;
  while (end < shorter.length - start && shorter.at(-1 - end) === longer.at(-1 - end)) end++;
  return longer.slice(start, longer.length - end);
}

describe('core: simulator difficulty', () => {
  it("normal's prompts are the prompts without a level, and their hash is the one recorded before levels", () => {
    for (const s of [english, chinese]) {
      assert.deepEqual(analysisMessages(s, history, 'Hi', 40, 'normal'), analysisMessages(s, history, 'Hi', 40));
      for (const ends of [false, true])
        assert.deepEqual(
          replyMessages(s, history, analysis, 40, ends, 'normal'),
          replyMessages(s, history, analysis, 40, ends),
        );
    }
    assert.equal(simulatorPromptHash(), NORMAL_PROMPT_HASH);
    assert.equal(simulatorPromptHash(['normal']), NORMAL_PROMPT_HASH);
  });

  it('simple and hard add their own words to the analysis and reply prompts, in the scenario language', () => {
    const hashes = new Set([NORMAL_PROMPT_HASH]);
    for (const level of ['simple', 'hard'] as const) {
      hashes.add(simulatorPromptHash([level]));
      for (const s of [english, chinese]) {
        const plainAnalysis = system(analysisMessages(s, history, 'Hi', 40));
        const levelAnalysis = system(analysisMessages(s, history, 'Hi', 40, level));
        const plainReply = system(replyMessages(s, history, analysis, 40, true));
        const levelReply = system(replyMessages(s, history, analysis, 40, true, level));
        for (const [plain, withLevel] of [
          [plainAnalysis, levelAnalysis],
          [plainReply, levelReply],
        ] as const) {
          const words = added(plain, withLevel);
          assert.ok(words.trim().length > 20, `${level} ${s.language} adds words`);
          // In the prompt's own language.
          assert.equal(hasChinese(words), s.language === 'zh', words);
        }
        // The user message (the dialogue itself) does not change.
        assert.deepEqual(analysisMessages(s, history, 'Hi', 40, level)[1], analysisMessages(s, history, 'Hi', 40)[1]);
      }
    }
    assert.equal(hashes.size, 3, 'each level has its own prompt hash');
    assert.match(system(analysisMessages(english, history, 'Hi', 40, 'simple')), /almost any kind or positive reply/);
    assert.match(system(analysisMessages(english, history, 'Hi', 40, 'hard')), /fits your emotional needs closely/);
    assert.match(system(replyMessages(english, history, analysis, 40, false, 'hard')), /sarcasm/);
    assert.match(system(replyMessages(chinese, history, analysis, 40, false, 'hard')), /冷嘲热讽/);
    // The closing instruction still ends the reply prompt's rules.
    assert.match(system(replyMessages(english, history, analysis, 40, true, 'hard')), /sarcasm\. You have decided/);
  });

  it("a dialogue's level: the scenario's own, else the settings', else normal; normal is written as no field", () => {
    assert.equal(dialogueDifficulty({}, {}), 'normal');
    assert.equal(dialogueDifficulty({ difficulty: 'hard' }, {}), 'hard');
    assert.equal(dialogueDifficulty({ difficulty: 'hard' }, { difficulty: 'simple' }), 'simple');
    const simulator = dialogueSettings().simulator;
    assert.deepEqual(withDifficulty({ ...simulator, difficulty: 'hard' as const }, 'normal'), simulator);
    assert.equal(withDifficulty(simulator, 'simple').difficulty, 'simple');
  });

  it('a scenario may name its level; an unknown level is refused, naming the field', () => {
    assert.equal(scenarioSchema.parse({ ...english, difficulty: 'hard' }).difficulty, 'hard');
    const bad = scenarioSchema.safeParse({ ...english, difficulty: 'brutal' });
    assert.ok(!bad.success);
    assert.deepEqual(
      bad.error.issues.map((i) => i.path.join('.')),
      ['difficulty'],
    );
  });

  it('the environment records a level other than normal, with the prompt hash of its prompts', () => {
    const normal = dialogueSettings();
    const hard = { ...normal, simulator: { ...normal.simulator, difficulty: 'hard' as const } };
    assert.deepEqual(rewardEnvironment(normal).simulator, {
      baseURL: normal.simulator.baseURL,
      model: 'fake-simulator',
    });
    assert.equal(rewardEnvironment(normal).promptHash, NORMAL_PROMPT_HASH);
    assert.equal(rewardEnvironment(hard).simulator.difficulty, 'hard');
    assert.equal(rewardEnvironment(hard).promptHash, simulatorPromptHash(['hard']));
    // A training step's mix: its shares, and the hash of every level it played; one level reads as that level.
    const mixed = rewardEnvironment(normal, { simple: 0.25, hard: 0.75 });
    assert.deepEqual(mixed.simulator.difficultyMix, { simple: 0.25, hard: 0.75 });
    assert.equal(mixed.simulator.difficulty, undefined);
    assert.equal(mixed.promptHash, simulatorPromptHash(['simple', 'hard']));
    assert.deepEqual(rewardEnvironment(normal, { hard: 1 }), rewardEnvironment(hard));
    assert.deepEqual(rewardEnvironment(hard, { normal: 1 }), rewardEnvironment(normal));
    assert.equal(difficultyText(mixed.simulator), 'mix: simple 25 % · hard 75 %');
    assert.equal(difficultyText(rewardEnvironment(normal).simulator), 'normal');
  });

  it('evaluations at different levels differ in their environment, named `simulator.difficulty`; normal equals a manifest without levels', () => {
    const seeds = { base: 1, repeats: 1, dialogues: [{ scenarioId: 'a', seed: 5 }] };
    const normal = dialogueSettings();
    const hard = { ...normal, simulator: { ...normal.simulator, difficulty: 'hard' as const } };
    const a = evaluationManifest(hard, seeds);
    const b = evaluationManifest(normal, seeds);
    const differences = manifestFieldDifferences(a, b);
    assert.deepEqual(differences, [
      { field: 'promptHash', a: JSON.stringify(simulatorPromptHash(['hard'])), b: JSON.stringify(NORMAL_PROMPT_HASH) },
      { field: 'simulator.difficulty', a: '"hard"', b: '"normal"' },
    ]);
    assert.ok(differences.every((d) => isEnvironmentField(d.field)));
    // A manifest written before levels (no field) and a new normal one measure the same thing.
    const { difficulty: _none, ...older } = b.simulator;
    assert.deepEqual(manifestFieldDifferences({ ...b, simulator: older }, b), []);
    assert.deepEqual(manifestFieldDifferences({ ...b, simulator: { ...b.simulator, difficulty: 'normal' } }, b), []);
  });
});
