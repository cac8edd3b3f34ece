import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { lineChart, linePath, niceTicks, tickFormat } from '../../src/report/charts.js';
import { escapeHtml, html, raw } from '../../src/report/html.js';
import { parseRunMetrics } from '../../src/report/load.js';
import { renderEvaluationPage, renderRunPage, runEvalPoints } from '../../src/report/index.js';
import { buildEvaluationReport } from '../../src/core/evaluationReport.js';
import { evaluationManifest, rewardEnvironment } from '../../src/core/evaluationManifest.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { configSchema } from '../../src/config/schema.js';
import { DIALOGUES, INJECTION, makeTranscript, RUN, stepRecord } from './fixtures.js';

describe('report renderers (pure)', () => {
  it('escapes interpolated text and passes trusted markup through', () => {
    assert.equal(
      escapeHtml(`<a href="x" onclick='y'>&</a>`),
      '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
    const value = html`<p title="${'"><script>'}">${INJECTION}${raw('<b>ok</b>')}${['<i>', html`<em>${'&'}</em>`]}${null}${3}</p>`;
    assert.equal(
      value.value,
      `<p title="&quot;&gt;&lt;script&gt;">${escapeHtml(INJECTION)}<b>ok</b>&lt;i&gt;<em>&amp;</em>3</p>`,
    );
  });

  it('picks nice ticks and formats them with the digits their step needs', () => {
    assert.deepEqual(niceTicks(0, 100, 5), [0, 20, 40, 60, 80, 100]);
    assert.deepEqual(niceTicks(0, 1, 4), [0, 0.25, 0.5, 0.75, 1]);
    assert.deepEqual(niceTicks(1, 6, 10, true), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(niceTicks(3, 3), [3]);
    assert.deepEqual([0, 0.25, 0.5].map(tickFormat([0, 0.25, 0.5])), ['0.00', '0.25', '0.50']);
    assert.deepEqual([0, 20].map(tickFormat([0, 20])), ['0', '20']);
  });

  it('breaks lines at missing values and marks lone points', () => {
    const id = (v: number) => v;
    assert.equal(
      linePath(
        [
          { x: 0, y: 1 },
          { x: 1, y: 2 },
          { x: 2, y: null },
          { x: 3, y: 4 },
          { x: 4, y: Number.NaN },
          { x: 5, y: 6 },
          { x: 6, y: 7 },
        ],
        id,
        id,
      ),
      'M0.0,1.0L1.0,2.0M3.0,4.0M5.0,6.0L6.0,7.0',
    );
    const svg = lineChart({
      ariaLabel: 'a<b',
      series: [
        {
          name: 's"1',
          color: 'red',
          points: [
            { x: 1, y: 1 },
            { x: 2, y: null },
            { x: 3, y: 5 },
          ],
          markers: false,
        },
      ],
      hover: true,
    }).value;
    assert.equal((svg.match(/<circle/g) ?? []).length, 2, 'both lone points get a marker');
    assert.ok(svg.includes('aria-label="a&lt;b"') && svg.includes('data-name="s&quot;1"'));
    const hover = JSON.parse(
      /data-hover="([^"]*)"/
        .exec(svg)?.[1]
        ?.replace(/&quot;/g, '"')
        .replace(/&amp;/g, '&') ?? '{}',
    ) as { xs: number[]; series: { ys: (number | null)[] }[] };
    assert.deepEqual(hover.xs, [1, 2, 3]);
    assert.deepEqual(hover.series[0]?.ys, [1, null, 5]);
  });

  it('renders an evaluation page whose only script is allowed by its CSP hash', () => {
    const transcripts = new Map(DIALOGUES.map((d) => [`rollouts/e/${d.id}.json`, makeTranscript(d, 'e')]));
    const report = buildEvaluationReport({
      evalId: 'e<1>',
      createdAt: '2026-01-01T00:00:00.000Z',
      policyModel: 'p',
      simulatorModel: 's',
      scenarios: 'dir',
      settings: { initialEmotion: 40, maxTurns: 10, think: false, simulatorTemperature: 0 },
      results: DIALOGUES.map((d) => ({
        status: 'ok' as const,
        scenarioId: d.id,
        goalType: d.goalType,
        personality: d.personality,
        finalEmotion: d.emotions[d.emotions.length - 1] ?? 0,
        outcome: d.outcome,
        turns: d.emotions.length - 1,
        emotions: d.emotions,
        tokens: { policyPrompt: 1, policyCompletion: 1, simulatorPrompt: 1, simulatorCompletion: 1 },
        artifact: `rollouts/e/${d.id}.json`,
      })),
      runName: null,
      step: null,
    });
    const page = renderEvaluationPage({ report, transcripts, generatedAt: 'now' });
    assert.ok(page.startsWith('<!DOCTYPE html>'));
    assert.ok(!page.includes(INJECTION), 'transcript markup is escaped');
    assert.ok(page.includes('<h1>e&lt;1&gt;</h1>'));
    const scripts = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? '');
    assert.equal(scripts.length, 1);
    const hash = createHash('sha256')
      .update(scripts[0] ?? '', 'utf8')
      .digest('base64');
    const csp = (/http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(page)?.[1] ?? '').replace(/&#39;/g, "'");
    assert.ok(csp.includes(`script-src 'sha256-${hash}'`), 'the CSP allows exactly this script');
    assert.ok(csp.startsWith("default-src 'none';"), 'nothing can be fetched');
    assert.ok(!/\b(src|href)="(https?:)?\/\//.test(page), 'no external resources');
  });

  it('shows the score interval, error bars on the breakdowns, and the manifest', () => {
    const settings = rolloutSettingsFromConfig(configSchema.parse({}));
    const results = DIALOGUES.flatMap((d) =>
      [0, 1].map((repeat) => ({
        status: 'ok' as const,
        scenarioId: d.id,
        goalType: d.goalType,
        personality: d.personality,
        finalEmotion: Math.max(0, (d.emotions[d.emotions.length - 1] ?? 0) - repeat * 4),
        outcome: d.outcome,
        turns: d.emotions.length - 1,
        emotions: d.emotions,
        tokens: { policyPrompt: 1, policyCompletion: 1, simulatorPrompt: 1, simulatorCompletion: 1 },
        artifact: `rollouts/e/${d.id}-${repeat}.json`,
        repeat,
        seed: 100 + repeat,
      })),
    );
    const report = buildEvaluationReport({
      evalId: 'ci',
      createdAt: '2026-01-01T00:00:00.000Z',
      policyModel: 'p',
      simulatorModel: 's',
      scenarios: 'dir',
      settings: { initialEmotion: 40, maxTurns: 10, think: false, simulatorTemperature: 0 },
      results,
      runName: null,
      step: null,
      repeats: 2,
      manifest: evaluationManifest(settings, {
        base: 7,
        repeats: 2,
        dialogues: results.map((r) => ({ scenarioId: r.scenarioId, seed: r.seed })),
      }),
    });
    const page = renderEvaluationPage({ report, transcripts: new Map() });
    assert.match(page, /id="score-ci">95 % CI [\d.]+–[\d.]+ \(bootstrap over \d+ scenarios × 2 repeats\)/);
    assert.ok((page.match(/<path class="err"/g) ?? []).length >= 2, 'error bars on the breakdown bars');
    assert.match(page, /<h2>Manifest<\/h2>/);
    assert.ok(page.includes(`<dd>${report.manifest?.promptHash}</dd>`));
    assert.ok(page.includes('<dd>base 7 · 2 per scenario</dd>'));
  });

  it('renders an evaluation in which no dialogue finished', () => {
    const report = buildEvaluationReport({
      evalId: 'empty',
      createdAt: 'x',
      policyModel: 'p',
      simulatorModel: 's',
      scenarios: 'dir',
      settings: { initialEmotion: 40, maxTurns: 10, think: false, simulatorTemperature: 0 },
      results: [{ status: 'failed', scenarioId: 'a', goalType: 'venting', personality: 'passive', error: 'boom' }],
      runName: null,
      step: null,
    });
    const page = renderEvaluationPage({ report, transcripts: new Map() });
    assert.match(page, /No finished dialogues to draw\./);
    assert.match(page, /<div class="error-box">boom<\/div>/);
  });

  it('renders a run page with no steps yet', () => {
    const page = renderRunPage({ run: RUN, steps: [], evaluations: [], generatedAt: 'now' });
    assert.match(page, /No steps recorded yet\./);
    assert.match(page, /No evaluation of this run yet/);
  });

  it('names the latest published version in the header, and what each step sampled from', () => {
    const page = renderRunPage({
      run: RUN,
      steps: [stepRecord(1), stepRecord(2)],
      evaluations: [],
      generatedAt: 'now',
    });
    const header = page.slice(page.indexOf('<header'), page.indexOf('</header>'));
    // After 2 steps the newest weights are @2; step 2 itself sampled from @1.
    assert.match(header, new RegExp(`latest version <b>${RUN}@2</b>`));
    assert.match(header, new RegExp(`step 2 sampled from <b>${RUN}@1</b>`));
    assert.doesNotMatch(header, new RegExp(`latest [a-z]+ <b>${RUN}@1</b>`));
    assert.match(page, /<th data-sortable>Sampled from<\/th>/);
    assert.match(page, new RegExp(`<td class="muted" data-v="${RUN}@0">${RUN}@0</td>`));
  });

  it('shows the environment the rewards were measured in, one block per span of steps that shared it', () => {
    const settings = rolloutSettingsFromConfig(configSchema.parse({}));
    const environment = rewardEnvironment(settings);
    const other = rewardEnvironment({ ...settings, simulator: { ...settings.simulator, model: 'other-judge' } });
    const card = (steps: StepMetricsRecord[]) => {
      const page = renderRunPage({ run: RUN, steps, evaluations: [], generatedAt: 'now' });
      const at = page.indexOf('id="environment"');
      return at < 0 ? '' : page.slice(at, page.indexOf('</section>', at));
    };
    const same = card([1, 2, 3].map((n) => ({ ...stepRecord(n), environment })));
    assert.match(same, /the same for every step recorded/);
    assert.ok(same.includes(`${settings.simulator.model} at ${settings.simulator.baseURL}`), same);
    assert.ok(same.includes(environment.promptHash), same);
    assert.match(same, /Initial emotion<\/dt><dd>40</);

    const changed = card([
      stepRecord(1),
      { ...stepRecord(2), environment },
      { ...stepRecord(3), environment },
      { ...stepRecord(4), environment: other },
    ]);
    assert.match(changed, /changed during the run/);
    assert.deepEqual(
      [...changed.matchAll(/<h3>([^<]+)<\/h3>/g)].map((m) => m[1]),
      ['step 1', 'steps 2–3', 'step 4'],
    );
    assert.match(changed, /Not recorded/);
    assert.match(changed, /other-judge at/);
    assert.equal(card([]), '', 'no steps, no card');
  });

  it('reads metrics.jsonl: the last record of a step wins, a broken line is noted', () => {
    const text =
      [stepRecord(1), stepRecord(2), { ...stepRecord(2), successRate: 0.9 }].map((r) => JSON.stringify(r)).join('\n') +
      '\n{"half":\n\n';
    const { steps, notes } = parseRunMetrics(text, RUN);
    assert.deepEqual(
      steps.map((s) => [s.step, s.successRate]),
      [
        [1, stepRecord(1).successRate],
        [2, 0.9],
      ],
    );
    assert.deepEqual(notes, [`runs/${RUN}/metrics.jsonl line 4: not valid JSON (skipped)`]);
  });

  it('takes the Sentient-score points from the evaluations and from steps that name others', () => {
    const steps = [stepRecord(3), stepRecord(4)];
    const points = runEvalPoints(
      [...steps, { ...stepRecord(5), eval: { evalId: 'other', score: 70, success: 2, failure: 0, count: 4 } }],
      [],
    );
    assert.deepEqual(
      points.map((p) => [p.evalId, p.step, p.score]),
      [
        [`${RUN}-eval-4`, 4, 55.5],
        ['other', 5, 70],
      ],
    );
  });
});
