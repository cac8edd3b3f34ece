import assert from 'node:assert/strict';
import { renderEvaluationTable } from '../../src/cli/render/evaluationTable.js';
import { manifestLines } from '../../src/cli/render/evaluationIntervals.js';
import { renderTranscript } from '../../src/cli/render/transcript.js';
import { DIALOGUE_KEYS } from '../../src/core/dialogueKeys.js';
import { dialoguePhrases, dialogueRows } from '../../src/core/dialogueKeys.js';
import { buildEvaluationReport } from '../../src/core/evaluationReport.js';
import { environmentRows } from '../../src/report/evaluationManifest.js';
import { renderEvaluationPage } from '../../src/report/evaluationPage.js';
import { DIALOGUES, makeTranscript } from '../report/fixtures.js';

const SETTINGS = { initialEmotion: 41, maxTurns: 3, think: true };
const PHRASES = ['initial emotion 41', 'at most 3 turns', 'think-then-say'];

describe('dialogue settings in words: one table, every renderer lists them from it', () => {
  it('phrases and rows follow DIALOGUE_KEYS, one each, in its order', () => {
    assert.deepEqual(dialoguePhrases(SETTINGS), PHRASES);
    assert.deepEqual(dialoguePhrases({ ...SETTINGS, think: false })[2], 'direct replies');
    assert.deepEqual(dialogueRows(SETTINGS), [
      ['Initial emotion', '41'],
      ['Turns', 'at most 3'],
      ['Think-then-say', 'true'],
    ]);
    assert.equal(dialoguePhrases(SETTINGS).length, DIALOGUE_KEYS.length);
  });

  it("the transcript, the evaluation table, its manifest lines and page, and the manifest's rows show every setting", () => {
    const transcript = { ...makeTranscript(DIALOGUES[0]!, 'eval-words'), ...SETTINGS };
    assert.match(renderTranscript(transcript), /^Initial emotion 41; at most 3 turns; think-then-say$/m);
    const report = buildEvaluationReport({
      evalId: 'eval-words',
      createdAt: '2026-01-01T00:00:00.000Z',
      policyModel: 'p',
      simulatorModel: 's',
      scenarios: 'scenarios/eval',
      settings: { ...SETTINGS, simulatorTemperature: 0 },
      results: [],
      runName: null,
      step: null,
    });
    assert.ok(renderEvaluationTable(report, { color: false }).includes(PHRASES.join(' · ')));
    const page = renderEvaluationPage({ report, transcripts: new Map() });
    for (const phrase of PHRASES) assert.ok(page.includes(`<span>${phrase}</span>`), phrase);
    const protocol = {
      ...SETTINGS,
      simulatorTemperature: 0,
      policyTemperature: 0.7,
      simulatorMaxTokens: 512,
      policyMaxTokens: 256,
      structuredOutput: 'json',
      policySystemPrompt: 'hash',
    };
    const env = { simulator: { baseURL: 'http://127.0.0.1:1/v1', model: 's' }, promptHash: 'h', protocol };
    const rows = new Map(environmentRows(env as Parameters<typeof environmentRows>[0]));
    assert.equal(rows.get('Turns'), 'at most 3');
    assert.equal(rows.get('Think-then-say'), 'true');
    assert.ok(
      manifestLines({
        ...report,
        manifest: {
          attuneVersion: 'v',
          simulator: env.simulator,
          promptHash: 'h',
          seeds: { base: 1, repeats: 1 },
          protocol,
        },
      } as unknown as typeof report)[1]?.startsWith(`protocol: ${PHRASES.join(' · ')} · `),
    );
  });
});
