import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { buildEvaluationReport } from '../../src/core/evaluationReport.js';
import { evaluationManifest, rewardEnvironment } from '../../src/core/evaluationManifest.js';
import { renderEvaluationPage, renderRunPage } from '../../src/report/index.js';
import { renderEvaluationTable } from '../../src/cli/render/evaluationTable.js';
import { RUN, stepRecord } from './fixtures.js';

const settingsAt = (difficulty: string) =>
  rolloutSettingsFromConfig(loadConfig({ env: {}, set: [`simulator.difficulty=${difficulty}`] }));

function evaluationAt(difficulty: string) {
  const settings = settingsAt(difficulty);
  return buildEvaluationReport({
    evalId: `at-${difficulty}`,
    createdAt: '2026-01-01T00:00:00.000Z',
    policyModel: 'p',
    simulatorModel: 's',
    scenarios: 'dir',
    settings: { initialEmotion: 40, maxTurns: 10, think: false, simulatorTemperature: 0 },
    results: [],
    runName: null,
    step: null,
    manifest: evaluationManifest(settings, { base: 7, repeats: 1, dialogues: [] }),
  });
}

/** The run page's environment card. */
function environmentCard(page: string): string {
  const at = page.indexOf('id="environment"');
  return at < 0 ? '' : page.slice(at, page.indexOf('</section>', at));
}

describe('reports show the simulator difficulty', () => {
  it("an evaluation's manifest names its level, normal included", () => {
    for (const level of ['simple', 'normal', 'hard']) {
      const report = evaluationAt(level);
      const page = renderEvaluationPage({ report, transcripts: new Map() });
      assert.ok(page.includes(`<dt>Simulator difficulty</dt><dd>${level}</dd>`), level);
      assert.ok(renderEvaluationTable(report, { color: false }).includes(`(difficulty ${level})`), level);
    }
  });

  it("a run's environment card names each span's level or mix, and a change of level is a new span", () => {
    const hard = rewardEnvironment(settingsAt('hard'));
    const mixed = rewardEnvironment(settingsAt('normal'), { simple: 0.2, normal: 0.5, hard: 0.3 });
    const page = renderRunPage({
      run: RUN,
      steps: [
        { ...stepRecord(1), environment: hard },
        { ...stepRecord(2), environment: hard },
        { ...stepRecord(3), environment: mixed },
      ],
      evaluations: [],
      generatedAt: 'now',
    });
    const card = environmentCard(page);
    assert.match(card, /changed during the run/);
    assert.deepEqual(
      [...card.matchAll(/<h3>([^<]+)<\/h3>/g)].map((m) => m[1]),
      ['steps 1–2', 'step 3'],
    );
    assert.ok(card.includes('<dt>Simulator difficulty</dt><dd>hard</dd>'), card);
    assert.ok(card.includes('<dt>Simulator difficulty</dt><dd>mix: simple 20 % · normal 50 % · hard 30 %</dd>'), card);
  });
});
