import assert from 'node:assert/strict';
import { lineChart, niceTicks, tickFormat } from '../../src/report/charts.js';

/** Every tick's label over [lo, hi] at each tick count an axis may ask for. */
function labelsOver(lo: number, hi: number): { ticks: number[]; labels: string[] }[] {
  return [2, 3, 4, 5, 6, 8, 10].map((count) => {
    const ticks = niceTicks(lo, hi, count);
    return { ticks, labels: ticks.map(tickFormat(ticks)) };
  });
}

/** Labels never repeat, zero is never "-0", and each reads back as its own tick (to a thousandth of a step). */
function assertFaithful(lo: number, hi: number): void {
  for (const { ticks, labels } of labelsOver(lo, hi)) {
    const step = ticks.length > 1 ? ticks[1]! - ticks[0]! : 1;
    assert.equal(new Set(labels).size, labels.length, `labels repeat over ${lo}..${hi}: ${labels.join(' | ')}`);
    for (const [i, label] of labels.entries()) {
      assert.doesNotMatch(label, /^-0(\.0*)?(e[+-]?\d+)?$/, `"-0" over ${lo}..${hi}: ${labels.join(' | ')}`);
      assert.ok(
        Math.abs(Number(label) - ticks[i]!) <= step * 1e-3,
        `label ${label} is not tick ${ticks[i]} over ${lo}..${hi}`,
      );
    }
  }
}

describe('axis tick labels', () => {
  it('a loss range like -0.004..0.003: distinct labels, exact values, zero without a sign', () => {
    assertFaithful(-0.004, 0.003);
    const ticks = niceTicks(-0.004, 0.003, 4);
    assert.deepEqual(ticks.map(tickFormat(ticks)), ['-0.004', '-0.002', '0.000', '0.002']);
  });

  it('tiny and huge ranges: significant digits in exponent form, never rounded to one value', () => {
    for (const scale of [1e-9, 1e-7, 1e-5, 1e-3, 0.1, 10, 1e5, 1e7])
      for (const [lo, hi] of [
        [-4, 3],
        [-1, 1],
        [0, 2.5],
        [1, 1.2],
      ] as const)
        assertFaithful(lo * scale, hi * scale);
    const ticks = niceTicks(-4e-7, 3e-7, 4);
    assert.deepEqual(ticks.map(tickFormat(ticks)), ['-4.0e-7', '-2.0e-7', '0', '2.0e-7']);
    // What the labels already said stays as it was.
    assert.deepEqual([100_000, 200_000].map(tickFormat([100_000, 200_000])), ['1.0e+5', '2.0e+5']);
  });

  it("the run report's loss chart writes each y tick once, and none as -0", () => {
    const svg = lineChart({
      ariaLabel: 'Loss',
      width: 540,
      height: 260,
      series: [{ name: 'loss', color: '#000', points: [-4e-7, 1e-7, 3e-7].map((y, x) => ({ x, y })) }],
    }).value;
    const yLabels = [
      ...svg.matchAll(/<text class="tick" x="[\d.]+" y="[\d.]+" text-anchor="end">([^<]*)<\/text>/g),
    ].map((m) => m[1]!);
    assert.ok(yLabels.length >= 3, svg);
    assert.equal(new Set(yLabels).size, yLabels.length, yLabels.join(' | '));
    assert.ok(!yLabels.includes('-0'), yLabels.join(' | '));
  });
});
