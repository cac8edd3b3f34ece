import assert from 'node:assert/strict';
import { capabilityStepScore } from '../../src/core/capability/retention.js';
import { parseStepRecords, type StepMetricsRecord } from '../../src/core/runMetrics.js';
import { wilsonInterval } from '../../src/core/statistics/wilson.js';
import { renderRunPage } from '../../src/report/index.js';
import { RUN, stepRecord } from './fixtures.js';

const headline = (suite: 'math' | 'code', solved: number, step: number) => ({
  evalId: `${RUN}-eval-s${step}-${suite}`,
  suite,
  score: solved / 50,
  ci: wilsonInterval(solved, 50),
  solved,
  count: 50,
  failed: 0,
  artifact: 'x',
});
const BASES = [
  { ...headline('math', 40, 0), count: 50 },
  { ...headline('code', 20, 0), count: 50 },
].map(({ suite, evalId, score, ci, count }) => ({ suite, evalId, score, ci, count }));

/** A step whose evaluation scored the Sentient score and both suites. */
function evaluated(step: number, sentient: number, math: number, code: number): StepMetricsRecord {
  return {
    ...stepRecord(step),
    eval: { evalId: `${RUN}-eval-s${step}`, score: sentient, success: 1, failure: 0, count: 4 },
    capability: [
      capabilityStepScore(headline('math', math, step), BASES),
      capabilityStepScore(headline('code', code, step), BASES),
    ],
  };
}

function pageOf(records: StepMetricsRecord[]): string {
  const { steps } = parseStepRecords(records.map((r) => JSON.stringify(r)).join('\n'), 'metrics.jsonl');
  return renderRunPage({ run: RUN, steps, evaluations: [], generatedAt: 'now' });
}

/** The marker tooltips ("step, value") of series `name` in the retention chart. */
function points(page: string, name: string): string[] {
  const chart = page.slice(page.indexOf('class="chart capability-curve"'));
  const start = chart.indexOf(`data-name="${name}"`);
  assert.ok(start >= 0, `no series ${name}`);
  const group = chart.slice(start, chart.indexOf('</g>', start));
  return [...group.matchAll(/<title>[^:]*: ([^<]*)<\/title>/g)].map((m) => m[1] ?? '');
}

describe('capability retention on the run page', () => {
  it('charts each suite from the base (step 0) with its interval, beside the Sentient score, on one figure', () => {
    const page = pageOf([evaluated(2, 40, 38, 20), stepRecord(3), evaluated(4, 55.5, 30, 21)]);
    assert.match(page, /data-png="capability-retention"/);
    // Right after the Sentient-score figure.
    assert.ok(page.indexOf('data-png="sentient-score"') < page.indexOf('data-png="capability-retention"'));
    assert.deepEqual(points(page, 'math'), ['0, 80', '2, 76', '4, 60']);
    assert.deepEqual(points(page, 'code'), ['0, 40', '2, 40', '4, 42']);
    assert.deepEqual(points(page, 'Sentient score'), ['2, 40', '4, 55.5']);
    const chart = page.slice(page.indexOf('class="chart capability-curve"'));
    const math = chart.slice(chart.indexOf('data-name="math"'));
    assert.match(math.slice(0, math.indexOf('</g>')), /<path class="band"/, 'the interval is drawn');
  });

  it('a run without suites renders exactly the page it did before', () => {
    const records = [stepRecord(1), stepRecord(2), stepRecord(4)];
    const page = pageOf(records);
    assert.doesNotMatch(page, /capability-retention|capability-curve/);
    assert.match(
      page,
      /data-png="sentient-score"[\s\S]*?<\/figure>\n\n<figure class="card wide" data-png="success-failure"/,
    );
  });
});
