import assert from 'node:assert/strict';
import { renderEvaluationTable, emotionSparkline } from '../../src/cli/render/evaluationTable.js';
import { buildEvaluationReport, type EvaluationEntry } from '../../src/core/evaluationReport.js';

const tokens = { policyPrompt: 100, policyCompletion: 20, simulatorPrompt: 200, simulatorCompletion: 40 };

function entry(
  scenarioId: string,
  goalType: 'deep-empathy' | 'venting',
  personality: 'negative' | 'passive',
  emotions: number[],
  outcome: 'success' | 'failure' | 'turn-limit',
): EvaluationEntry {
  return {
    status: 'ok',
    scenarioId,
    goalType,
    personality,
    finalEmotion: emotions[emotions.length - 1] ?? 0,
    outcome,
    turns: emotions.length - 1,
    emotions,
    tokens,
    artifact: `rollouts/e/${scenarioId}.json`,
  };
}

const report = buildEvaluationReport({
  evalId: 'nightly-7',
  createdAt: '2026-01-01T02:00:00.000Z',
  policyModel: 'qwen-7b',
  simulatorModel: 'sim',
  scenarios: 'scenarios/eval',
  settings: { initialEmotion: 40, maxTurns: 10, think: true, simulatorTemperature: 0 },
  results: [
    entry('a-long-scenario-id', 'deep-empathy', 'negative', [40, 50, 60, 70, 80, 90, 100], 'success'),
    entry('b', 'venting', 'passive', [40, 30, 20, 10, 5], 'failure'),
    entry('c', 'venting', 'negative', [40, 45, 47, 49, 52, 55, 57, 58, 60, 61, 63], 'turn-limit'),
    {
      status: 'failed',
      scenarioId: 'd',
      goalType: 'venting',
      personality: 'passive',
      error: 'simulator returned 503 after 5 attempts',
    },
  ],
  runName: 'grpo-1',
  step: 40,
});

describe('attune eval terminal table', () => {
  it('shows the overall numbers, the breakdowns and one row per scenario, without colour codes', () => {
    const out = renderEvaluationTable(report, { color: false });
    assert.ok(!out.includes('\x1b['), 'no ANSI codes');
    const lines = out.split('\n');
    assert.equal(lines[0], 'Evaluation nightly-7 · run grpo-1@40');
    assert.match(out, /^Sentient score {2}56\.00 \/ 100 {2}\(state B\)$/m); // (100 + 5 + 63) / 3
    assert.match(out, /^SUCCESS {2}FAILURE {2}COUNT {2}FAILED {2}MEAN TURNS {2}TOKENS$/m);
    assert.ok(lines.includes('      1        1      3       1        6.67    1080'));
    assert.match(out, /1 dialogue\(s\) failed to run: reported, excluded from the score/);

    const goal = lines.slice(lines.indexOf(lines.find((l) => l.startsWith('GOAL TYPE')) ?? ''), undefined);
    assert.equal(goal[0], 'GOAL TYPE     N   SCORE  SUCCESS  FAILURE  MEAN TURNS');
    assert.equal(goal[1], 'deep-empathy  1  100.00        1        0        6.00');
    assert.equal(goal[2], 'venting       2   34.00        0        1        7.00');
    assert.match(out, /^PERSONALITY {2}N {2}SCORE {2}SUCCESS {2}FAILURE {2}MEAN TURNS$/m);
    assert.ok(lines.includes('negative     2  81.50        1        0        8.00'));
    assert.ok(lines.includes('passive      1   5.00        0        1        4.00'));

    const header = lines.find((l) => l.startsWith('SCENARIO')) ?? '';
    assert.match(header, /^SCENARIO {12}GOAL TYPE {5}PERSONALITY {2}FINAL {2}OUTCOME {5}TURNS {2}EMOTIONS$/);
    const row = lines.find((l) => l.startsWith('a-long-scenario-id')) ?? '';
    assert.equal(
      row,
      'a-long-scenario-id  deep-empathy  negative       100  success         6  ▄▅▅▆▇▇█  40 50 60 70 80 90 100',
    );
    const failed = lines.find((l) => l.startsWith('d ')) ?? '';
    assert.equal(
      failed,
      'd                   venting       passive          -  FAILED          -  simulator returned 503 after 5 attempts',
    );
    // Right-aligned FINAL column: every row's value ends under the header's last letter.
    const end = header.indexOf('FINAL') + 'FINAL'.length;
    for (const id of ['a-long-scenario-id', 'b ', 'c ', 'd ']) {
      const line = lines.find((l) => l.startsWith(id)) ?? '';
      assert.notEqual(line[end - 1], ' ', `${id} FINAL ends at column ${end}`);
      assert.equal(line[end], ' ');
    }
    assert.ok(out.endsWith('\n'));
    assert.ok(
      lines.every((l) => l === l.trimEnd()),
      'no trailing spaces',
    );
  });

  it("shows the score interval under the score, each group's intervals, and the manifest line", () => {
    const out = renderEvaluationTable(report, { color: false });
    const lines = out.split('\n');
    const scoreLine = lines.findIndex((l) => l.startsWith('Sentient score'));
    assert.match(
      lines[scoreLine + 1] ?? '',
      /^95 % CI \[\d+\.\d\d, \d+\.\d\d\] · success 33\.3 % \[\d+\.\d, \d+\.\d\] · failure 33\.3 % \[\d+\.\d, \d+\.\d\] · bootstrap over 3 scenario\(s\)$/,
    );
    assert.match(out, /^GROUP +N +SCORE 95 % CI +SUCCESS +FAILURE$/m);
    assert.match(out, /^deep-empathy +1 +\[100\.00, 100\.00\] +100\.0 % \[100\.0, 100\.0\] +0\.0 % \[0\.0, 0\.0\]$/m);
    assert.match(out, /^manifest: none \(written before manifests\)$/m);
  });

  it('colours scores by emotion state on a TTY', () => {
    const out = renderEvaluationTable(report, { color: true });
    assert.match(out, /\x1b\[35m {2}100\x1b\[0m/, 'S in violet');
    assert.ok(out.includes('\x1b[31mFAILED'), 'failed in red');
    assert.equal(
      out.replace(/\x1b\[[0-9;]*m/g, ''),
      renderEvaluationTable(report, { color: false }),
      'same text without colour',
    );
  });

  it('draws emotion sparklines on a 0..100 scale', () => {
    assert.equal(emotionSparkline([0, 50, 100]), '▁▅█');
    assert.equal(emotionSparkline([-5, 120]), '▁█');
  });
});
