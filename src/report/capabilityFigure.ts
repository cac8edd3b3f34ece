/** The run page's capability retention: each suite's score (share solved) beside the Sentient score, from the base on. */
import type { CapabilityStepScore } from '../core/capability/retention.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { figure, legendItemsOf } from './cards.js';
import { lineChart, type LineSeries } from './charts.js';
import type { SafeHtml } from './html.js';
import type { RunChartData } from './runCharts.js';
import { SERIES } from './theme.js';

const SUITE_COLORS: Record<string, string> = { math: SERIES.orange, code: SERIES.teal };

/** A suite's points in percent, with its 95 % interval as the band: the base at step 0, then each evaluation. */
function suiteSeries(suite: string, steps: readonly StepMetricsRecord[]): LineSeries {
  const scored = steps.flatMap((s) => {
    const c = s.capability?.find((x) => x.suite === suite);
    return c ? [{ step: s.step, score: c as Pick<CapabilityStepScore, 'score' | 'ci'> }] : [];
  });
  const base = steps.flatMap((s) => s.capability?.find((x) => x.suite === suite)?.base ?? [])[0];
  const all = [...(base ? [{ step: 0, score: base }] : []), ...scored];
  const pct = (x: number | null) => (x === null ? null : x * 100);
  return {
    name: suite,
    color: SUITE_COLORS[suite] ?? SERIES.pink,
    width: 2.2,
    markers: true,
    points: all.map((p) => ({ x: p.step, y: pct(p.score.score) })),
    band: all.flatMap((p) => (p.score.ci ? [{ x: p.step, lo: p.score.ci.low * 100, hi: p.score.ci.high * 100 }] : [])),
  };
}

/**
 * One figure with the suites and the Sentient score on one 0–100 axis, so a run that gains empathy
 * and loses maths or code shows it at a glance; nothing (the page as before) for runs without suites.
 */
export function capabilityFigure({ steps, plotted, wide }: RunChartData): SafeHtml | '' {
  const suites = [...new Set(steps.flatMap((s) => s.capability?.map((c) => c.suite) ?? []))];
  if (suites.length === 0) return '';
  const series: LineSeries[] = [
    {
      name: 'Sentient score',
      color: SERIES.violet,
      dashed: true,
      markers: true,
      points: plotted.map((e) => ({ x: e.step, y: e.score })),
    },
    ...suites.map((suite) => suiteSeries(suite, steps)),
  ];
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const chart = lineChart({
    ...wide,
    xDomain: [Math.min(...xs), Math.max(...xs)],
    ariaLabel: 'Capability retention and Sentient score over steps',
    className: 'capability-curve',
    yDomain: [0, 100],
    yLabel: 'score (%)',
    hoverDigits: 1,
    series,
  });
  return figure(
    'Capability retention',
    "share of each capability suite's problems solved (band: 95 % Wilson interval; step 0: the base policy) beside the Sentient score, on the same versions",
    'capability-retention',
    chart,
    legendItemsOf(series),
    true,
  );
}
