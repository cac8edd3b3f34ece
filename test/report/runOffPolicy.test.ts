import assert from 'node:assert/strict';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { renderRunPage } from '../../src/report/index.js';
import { RUN, stepRecord } from './fixtures.js';

/** A step of a run whose rollouts overlapped the optimizer step: samples one version old. */
function offPolicyRecord(step: number, figures: Partial<StepMetricsRecord['trainer']>): StepMetricsRecord {
  const record = stepRecord(step);
  return { ...record, trainer: { ...record.trainer, ...figures } };
}

/** The cells of the step table's row of `step`, as the page's HTML. */
function stepRow(page: string, step: number): string {
  const start = page.indexOf(`<td class="num" data-v="${step}"><b>${step}</b></td>`);
  assert.ok(start >= 0, `no table row of step ${step}`);
  return page.slice(start, page.indexOf('</tr>', start));
}

const cells = (row: string) => [...row.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => m[1] ?? '');

describe('off-policy figures on the run page', () => {
  const headers = (page: string) => [...page.matchAll(/<th[^>]*>([^<]*)<\/th>/g)].map((m) => m[1]);

  it('shows staleness, importance-weight mean / max and the truncated share per step, and charts the mean', () => {
    const page = renderRunPage({
      run: RUN,
      steps: [
        offPolicyRecord(2, {
          staleness_histogram: { '1': 8 },
          is_weight_mean: 1.0123,
          is_weight_max: 1.8,
          is_truncated_share: 0.015,
        }),
        offPolicyRecord(3, {
          staleness_histogram: { '1': 2, '0': 6 },
          is_weight_mean: 0.998,
          is_weight_max: 1.2,
          is_truncated_share: 0,
        }),
      ],
      evaluations: [],
      generatedAt: 'now',
    });
    const columns = headers(page);
    const at = (name: string) => columns.indexOf(name) - columns.indexOf('Step');
    assert.ok(at('Staleness') > 0 && at('IS weight') > 0 && at('Truncated') > 0, columns.join(', '));
    const two = cells(stepRow(page, 2));
    assert.equal(two[at('Staleness')], '1: 8');
    assert.equal(two[at('IS weight')], '1.012<span class="muted"> / 1.800</span>');
    assert.equal(two[at('Truncated')], '1.5%');
    const three = cells(stepRow(page, 3));
    assert.equal(three[at('Staleness')], '0:6 1:2', 'several staleness keys, ascending and compact');
    assert.match(stepRow(page, 3), /data-v="0.25"[^>]*>0:6 1:2/, 'sorts by the mean staleness');
    assert.equal(three[at('Truncated')], '0.0%');
    assert.match(page, /data-png="is-weight"/);
    assert.match(page, /<g class="series[^"]*" data-name="IS weight mean"/);
  });

  it('shows dashes for a record of a trainer that did not report them, and for null figures', () => {
    const page = renderRunPage({
      run: RUN,
      steps: [
        stepRecord(1),
        offPolicyRecord(2, {
          staleness_histogram: { '0': 8 },
          is_weight_mean: null,
          is_weight_max: null,
          is_truncated_share: null,
        }),
      ],
      evaluations: [],
      generatedAt: 'now',
    });
    const columns = headers(page);
    const at = (name: string) => columns.indexOf(name) - columns.indexOf('Step');
    const dash = '<span class="muted">–</span>';
    const old = cells(stepRow(page, 1));
    assert.deepEqual([old[at('Staleness')], old[at('IS weight')], old[at('Truncated')]], [dash, dash, dash]);
    const unweighed = cells(stepRow(page, 2));
    assert.deepEqual(
      [unweighed[at('Staleness')], unweighed[at('IS weight')], unweighed[at('Truncated')]],
      ['0: 8', dash, dash],
    );
    assert.match(stepRow(page, 2), /title="no sampler log-probs"/);
    assert.match(stepRow(page, 1), /title="not reported by the trainer"/);
    const table = page.slice(page.indexOf('<table class="sortable steps">'), page.indexOf('</table>'));
    assert.doesNotMatch(table, /undefined|NaN/);
    assert.doesNotMatch(page, /data-png="is-weight"/, 'no chart without a weight to draw');
  });
});
