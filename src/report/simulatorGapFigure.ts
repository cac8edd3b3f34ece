/** The run page's held-out gap: each simulator's Sentient score per evaluation step, and the gaps between them. */
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { figure, legendItemsOf } from './cards.js';
import { lineChart, type LineSeries } from './charts.js';
import type { SafeHtml } from './html.js';
import type { RunChartData } from './runCharts.js';
import { SERIES } from './theme.js';

const HELD_OUT_COLORS = [SERIES.teal, SERIES.orange, SERIES.pink, SERIES.blue, SERIES.red];

type Evaluated = { step: number; simulators: NonNullable<NonNullable<StepMetricsRecord['eval']>['simulators']> };

/** The steps whose evaluation scored with more than one simulator (the training simulator's first). */
function heldOutEvaluations(steps: readonly StepMetricsRecord[]): Evaluated[] {
  return steps.flatMap((s) =>
    s.eval?.simulators && s.eval.simulators.length > 1 ? [{ step: s.step, simulators: s.eval.simulators }] : [],
  );
}

/** A score line per simulator, and a dashed gap line (training less held-out) per held-out simulator. */
function gapSeries(evals: Evaluated[]): LineSeries[] {
  const training = evals[0]?.simulators[0]?.name ?? 'training';
  const names = [...new Set(evals.flatMap((e) => e.simulators.slice(1).map((s) => s.name)))];
  const scoreOf = (e: Evaluated, name: string) => e.simulators.find((s) => s.name === name);
  const color = (i: number) => HELD_OUT_COLORS[i % HELD_OUT_COLORS.length] ?? SERIES.grey;
  return [
    {
      name: `${training} (training)`,
      color: SERIES.violet,
      width: 2.6,
      markers: true,
      points: evals.map((e) => ({ x: e.step, y: e.simulators[0]?.score ?? null })),
    },
    ...names.map((name, i) => ({
      name,
      color: color(i),
      markers: true,
      points: evals.map((e) => ({ x: e.step, y: scoreOf(e, name)?.score ?? null })),
    })),
    ...names.map((name, i) => ({
      name: `gap to ${name}`,
      color: color(i),
      dashed: true,
      markers: true,
      points: evals.map((e) => ({ x: e.step, y: scoreOf(e, name)?.gap ?? null })),
    })),
  ];
}

/**
 * The held-out gap over the run's evaluations: the training simulator's score rising while a
 * held-out one's falls is the policy learning its judge, not empathy. Nothing for runs whose
 * evaluations had one simulator.
 */
export function simulatorGapFigure({ steps, wide }: RunChartData): SafeHtml | '' {
  const evals = heldOutEvaluations(steps);
  if (evals.length === 0) return '';
  const series = gapSeries(evals);
  const chart = lineChart({
    ...wide,
    ariaLabel: 'Sentient score per simulator over steps',
    className: 'simulator-gap',
    yLabel: 'Sentient score / gap',
    hoverDigits: 2,
    refLines: [{ y: 0, label: 'no gap', color: SERIES.grey }],
    series,
  });
  return figure(
    'Held-out gap',
    "each simulator's Sentient score per evaluation; dashed: the training simulator's score less the held-out one's",
    'simulator-gap',
    chart,
    legendItemsOf(series),
    true,
  );
}
