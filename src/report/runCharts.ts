/** The run page's charts: reward, Sentient score, success / failure rates and the trainer's figures, over steps. */
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { lineChart, type LineChartOptions, type LineSeries, type Point } from './charts.js';
import { empty, figure, legendItemsOf } from './cards.js';
import { html, type SafeHtml } from './html.js';
import { SERIES, STATE_COLORS } from './theme.js';

/** What the run page's charts are drawn from, and the options they share. */
export interface RunChartData {
  steps: StepMetricsRecord[];
  /** The evaluations that name a step: the Sentient-score curve. */
  plotted: { step: number; score: number }[];
  /** Options of the full-width charts: one step axis covering the steps and the evaluations. */
  wide: Omit<LineChartOptions, 'series' | 'ariaLabel'>;
  /** The same for the half-width charts of the trainer's figures. */
  half: Omit<LineChartOptions, 'series' | 'ariaLabel'>;
  /** 20 steps or more: the reward is drawn thin, with a smoothed mean over it. */
  many: boolean;
}

export function runChartData(steps: StepMetricsRecord[], plotted: { step: number; score: number }[]): RunChartData {
  const allX = [...steps.map((s) => s.step), ...plotted.map((e) => e.step)];
  const xDomain: [number, number] | undefined = allX.length > 0 ? [Math.min(...allX), Math.max(...allX)] : undefined;
  const wide = {
    width: 1100,
    height: 300,
    integerX: true,
    xLabel: 'step',
    hover: true,
    ...(xDomain ? { xDomain } : {}),
  };
  return { steps, plotted, wide, half: { ...wide, width: 540, height: 260 }, many: steps.length >= 20 };
}

function finite(value: number | null | undefined): number | null {
  return value === null || value === undefined || !Number.isFinite(value) ? null : value;
}

/** One point per step of the figure `pick` reads; a missing or non-finite value leaves a gap. */
function stepPoints(steps: StepMetricsRecord[], pick: (s: StepMetricsRecord) => number | null | undefined): Point[] {
  return steps.map((s) => ({ x: s.step, y: finite(pick(s)) }));
}

/** Exponential moving average (debiased), skipping gaps. */
function smooth(values: (number | null)[], alpha: number): (number | null)[] {
  let avg = 0;
  let weight = 0;
  return values.map((v) => {
    if (v === null) return null;
    avg = alpha * avg + (1 - alpha) * v;
    weight = alpha * weight + (1 - alpha);
    return avg / weight;
  });
}

/** Reward: mean with a ±std band, min/max dotted, and a smoothed mean when there are many steps. */
function rewardSeries({ steps, many }: RunChartData): LineSeries[] {
  const pts = (pick: (s: StepMetricsRecord) => number | null | undefined) => stepPoints(steps, pick);
  const bounds = { color: SERIES.grey, width: 1, dashed: true, opacity: 0.6, markers: false };
  const series: LineSeries[] = [
    { name: 'max', points: pts((s) => s.reward.max), ...bounds },
    { name: 'min', points: pts((s) => s.reward.min), ...bounds },
    {
      name: 'mean reward',
      color: SERIES.blue,
      points: pts((s) => s.reward.mean),
      band: steps
        .filter((s) => finite(s.reward.mean) !== null && finite(s.reward.std) !== null)
        .map((s) => ({
          x: s.step,
          lo: Math.max(0, s.reward.mean - s.reward.std),
          hi: Math.min(1, s.reward.mean + s.reward.std),
        })),
      width: many ? 1.2 : 2.2,
      opacity: many ? 0.55 : 1,
    },
  ];
  if (many) {
    const sm = smooth(
      steps.map((s) => finite(s.reward.mean)),
      0.8,
    );
    series.push({
      name: 'smoothed mean',
      color: SERIES.ink,
      points: steps.map((s, i) => ({ x: s.step, y: sm[i] ?? null })),
      width: 2.4,
      markers: false,
    });
  }
  return series;
}

export function rewardFigure(data: RunChartData): SafeHtml {
  const { steps, many } = data;
  const chart =
    steps.length === 0
      ? empty('No steps recorded yet.')
      : lineChart({
          ...data.wide,
          ariaLabel: 'Reward over steps',
          series: rewardSeries(data),
          yDomain: [0, 1],
          yLabel: 'reward',
          yFormat: (v) => v.toFixed(1),
        });
  return figure(
    'Reward',
    `mean final emotion / 100 per step${steps.length > 0 ? '; band: ± one standard deviation; dashed: min and max' : ''}${many ? '; dark: smoothed' : ''}`,
    'reward',
    chart,
    [
      { name: 'mean', color: SERIES.blue },
      { name: 'min / max', color: SERIES.grey, dashed: true },
      ...(many ? [{ name: 'smoothed', color: SERIES.ink }] : []),
    ],
    true,
  );
}

/** The Sentient score of each evaluation over the step it evaluated, on the emotion states' bands. */
export function scoreFigure({ plotted, wide }: RunChartData): SafeHtml {
  const chart =
    plotted.length === 0
      ? empty('No evaluation of this run yet: a run that evaluates every k steps draws its Sentient-score curve here.')
      : lineChart({
          ...wide,
          ariaLabel: 'Sentient score over steps',
          className: 'score-curve',
          yDomain: [0, 100],
          yLabel: 'Sentient score',
          hoverDigits: 2,
          bands: [
            { from: 0, to: 10, color: STATE_COLORS.F.tint, label: 'F' },
            { from: 10, to: 40, color: STATE_COLORS.C.tint, label: 'C' },
            { from: 40, to: 70, color: STATE_COLORS.B.tint, label: 'B' },
            { from: 70, to: 100, color: STATE_COLORS.A.tint, label: 'A' },
          ],
          series: [
            {
              name: 'Sentient score',
              color: SERIES.violet,
              points: plotted.map((e) => ({ x: e.step, y: e.score })),
              width: 2.6,
              markers: true,
            },
          ],
        });
  const caption = 'mean final emotion over the evaluation scenarios, from the evaluations of this run';
  return figure('Sentient score', caption, 'sentient-score', chart, [], true);
}

export function rateFigure({ steps, wide }: RunChartData): SafeHtml {
  const series: LineSeries[] = [
    { name: 'success', color: STATE_COLORS.S.fg, points: stepPoints(steps, (s) => s.successRate) },
    { name: 'failure', color: STATE_COLORS.F.fg, points: stepPoints(steps, (s) => s.failureRate) },
    { name: 'malformed', color: SERIES.grey, points: stepPoints(steps, (s) => s.malformedRate), dashed: true },
  ];
  const chart =
    steps.length === 0
      ? empty('No steps recorded yet.')
      : lineChart({
          ...wide,
          ariaLabel: 'Success, failure and malformed rates over steps',
          series,
          yDomain: [0, 1],
          yLabel: 'share of dialogues',
          yFormat: (v) => `${Math.round(v * 100)}%`,
        });
  return figure(
    'Success and failure rates',
    "share of the step's dialogues reaching 100, ending below 10, and with malformed policy output",
    'success-failure',
    chart,
    legendItemsOf(series),
    true,
  );
}

/** A half-width chart card of step figures, or a note when no step recorded any of them. */
function smallFigure(data: RunChartData, title: string, caption: string, png: string, series: LineSeries[]): SafeHtml {
  const hasData = series.some((s) => s.points.some((p) => p.y !== null));
  return figure(
    title,
    caption,
    png,
    hasData ? lineChart({ ...data.half, ariaLabel: title, series }) : empty('No values recorded.'),
    legendItemsOf(series),
  );
}

type StepSeries = {
  name: string;
  color: string;
  pick: (s: StepMetricsRecord) => number | null | undefined;
  dashed?: true;
};

/** A small chart of the step figures `lines` read. */
function stepFigure(data: RunChartData, title: string, caption: string, png: string, lines: StepSeries[]): SafeHtml {
  const series = lines.map(({ pick, ...line }) => ({ ...line, points: stepPoints(data.steps, pick) }));
  return smallFigure(data, title, caption, png, series);
}

/** The chart only when some step recorded the figure `recorded` reads: older runs and other setups lack it. */
function figureIfRecorded(
  data: RunChartData,
  recorded: (s: StepMetricsRecord) => number | null | undefined,
  ...figureArgs: [title: string, caption: string, png: string, lines: StepSeries[]]
): SafeHtml | '' {
  return data.steps.some((s) => finite(recorded(s)) !== null) ? stepFigure(data, ...figureArgs) : '';
}

/** The grid of the trainer's figures: KL, loss, entropy, gradients, and the off-policy and publish figures it recorded. */
export function trainerFigures(data: RunChartData): SafeHtml {
  return html`<section class="grid2">
${stepFigure(data, 'KL divergence', 'to the reference policy', 'kl', [{ name: 'KL', color: SERIES.teal, pick: (s) => s.trainer?.kl }])}
${stepFigure(data, 'Loss', 'total, policy and value loss', 'loss', [
  { name: 'loss', color: SERIES.ink, pick: (s) => s.trainer?.loss },
  { name: 'policy', color: SERIES.blue, pick: (s) => s.trainer?.policy_loss },
  { name: 'value', color: SERIES.orange, pick: (s) => s.trainer?.value_loss, dashed: true },
])}
${stepFigure(data, 'Entropy', 'mean token entropy of the policy', 'entropy', [{ name: 'entropy', color: SERIES.violet, pick: (s) => s.trainer?.entropy }])}
${stepFigure(
  data,
  'Gradient norm and clipping',
  'gradient norm before clipping; share of clipped ratios',
  'grad-norm',
  [
    { name: 'grad norm', color: SERIES.pink, pick: (s) => s.trainer?.grad_norm },
    { name: 'clip fraction', color: SERIES.grey, pick: (s) => s.trainer?.clip_fraction, dashed: true },
  ],
)}
${figureIfRecorded(
  data,
  (s) => s.trainer?.logprob_gap_max,
  'Sampler–trainer log-prob gap',
  'mean and max |sampler − trainer| log-prob over the sampled tokens, before the update (fp32: about 0)',
  'logprob-gap',
  [
    { name: 'max gap', color: SERIES.orange, pick: (s) => s.trainer?.logprob_gap_max },
    { name: 'mean gap', color: SERIES.blue, pick: (s) => s.trainer?.logprob_gap_mean },
  ],
)}
${figureIfRecorded(
  data,
  (s) => s.trainer?.is_weight_mean,
  'Importance weights',
  'mean sampler-to-trainer importance weight before truncation (on-policy: about 1)',
  'is-weight',
  [{ name: 'IS weight mean', color: SERIES.teal, pick: (s) => s.trainer?.is_weight_mean }],
)}
${figureIfRecorded(
  data,
  (s) => s.publishLatencyMs,
  'Publish latency',
  "ms from the publish's start to the first token vLLM serves from the step's adapter",
  'publish-latency',
  [{ name: 'publish ms', color: SERIES.orange, pick: (s) => s.publishLatencyMs }],
)}
</section>`;
}
