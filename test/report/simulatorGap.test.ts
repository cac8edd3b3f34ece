import assert from 'node:assert/strict';
import { parseStepRecords, type StepMetricsRecord } from '../../src/core/runMetrics.js';
import { renderRunPage } from '../../src/report/index.js';
import { RUN, stepRecord } from './fixtures.js';

/** A step that evaluated with `scores` (the training simulator's first), each with its gap to the first. */
function evaluated(step: number, scores: number[]): StepMetricsRecord {
  const names = ['rlver-sim', 'sage-sim', 'other-sim'];
  const simulators = scores.map((score, i) => ({ name: names[i]!, score, count: 4, gap: scores[0]! - score }));
  return {
    ...stepRecord(step),
    eval: { evalId: `eval-${step}`, score: scores[0]!, success: 1, failure: 0, count: 4, simulators },
  };
}

/** The page of a run whose metrics log holds `records`, read as the report reads metrics.jsonl. */
function pageOf(records: StepMetricsRecord[]): string {
  const { steps, notes } = parseStepRecords(records.map((r) => JSON.stringify(r)).join('\n'), 'metrics.jsonl');
  assert.deepEqual(notes, []);
  return renderRunPage({ run: RUN, steps, evaluations: [], generatedAt: 'now' });
}

/** The marker tooltips of series `name` in the held-out gap chart: "step, value". */
function points(page: string, name: string): string[] {
  const chart = page.slice(page.indexOf('class="chart simulator-gap"'));
  const start = chart.indexOf(`data-name="${name}"`);
  assert.ok(start >= 0, `no series ${name}`);
  const group = chart.slice(start, chart.indexOf('</g>', start));
  return [...group.matchAll(/<title>[^:]*: ([^<]*)<\/title>/g)].map((m) => m[1] ?? '');
}

describe('held-out gap on the run page', () => {
  it("charts each simulator's score and the gap at each evaluation step", () => {
    const page = pageOf([evaluated(2, [50, 48]), stepRecord(3), evaluated(4, [56, 45]), evaluated(6, [61, 40.5])]);
    assert.match(page, /data-png="simulator-gap"/);
    assert.deepEqual(points(page, 'rlver-sim (training)'), ['2, 50', '4, 56', '6, 61']);
    assert.deepEqual(points(page, 'sage-sim'), ['2, 48', '4, 45', '6, 40.5']);
    assert.deepEqual(points(page, 'gap to sage-sim'), ['2, 2', '4, 11', '6, 20.5']);
  });

  it('shows each held-out simulator beside the training one', () => {
    const page = pageOf([evaluated(2, [50, 48, 52]), evaluated(4, [56, 45, 53])]);
    assert.deepEqual(points(page, 'other-sim'), ['2, 52', '4, 53']);
    assert.deepEqual(points(page, 'gap to other-sim'), ['2, -2', '4, 3']);
  });

  it('is absent when the evaluations had one simulator', () => {
    const page = pageOf([evaluated(2, [50]), stepRecord(3), evaluated(4, [56])]);
    assert.doesNotMatch(page, /simulator-gap/);
    assert.doesNotMatch(pageOf([stepRecord(1), stepRecord(2)]), /simulator-gap/);
  });
});
