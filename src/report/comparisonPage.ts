import { emotionState } from '../core/emotion.js';
import type { EvaluationReport } from '../core/evaluationReport.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { empty, figure, type LegendItem } from './cards.js';
import { lineChart, type LineSeries } from './charts.js';
import { formatNumber, formatTime, html } from './html.js';
import { renderPage } from './page.js';
import { runEvalPoints } from './runEvalPoints.js';
import { SERIES, STATE_COLORS } from './theme.js';

/** One thing overlaid on the page: a training run (its steps and evaluations) or one evaluation. */
export type ComparedTarget =
  | { kind: 'run'; name: string; steps: StepMetricsRecord[]; evaluations: EvaluationReport[] }
  | { kind: 'evaluation'; name: string; report: EvaluationReport };

export interface ComparisonPageInput {
  targets: ComparedTarget[];
  notes?: string[];
  generatedAt?: string;
}

const PALETTE = [SERIES.blue, SERIES.orange, SERIES.teal, SERIES.pink, SERIES.violet, SERIES.ink, SERIES.red];

/** The evaluation that stands for a target in the score and goal-type tables: a run's latest one. */
function scoredEvaluation(target: ComparedTarget): EvaluationReport | null {
  if (target.kind === 'evaluation') return target.report;
  const evaluations = target.evaluations;
  return evaluations[evaluations.length - 1] ?? null;
}

const SCORE_BANDS = [
  { from: 0, to: 10, color: STATE_COLORS.F.tint, label: 'F' },
  { from: 10, to: 40, color: STATE_COLORS.C.tint, label: 'C' },
  { from: 40, to: 70, color: STATE_COLORS.B.tint, label: 'B' },
  { from: 70, to: 100, color: STATE_COLORS.A.tint, label: 'A' },
];

function scorePill(score: number | undefined): ReturnType<typeof html> | string {
  if (score === undefined || !Number.isFinite(score)) return html`<span class="muted">–</span>`;
  return html`<span class="emo-pill st-${emotionState(score)}"><span class="state">${emotionState(score)}</span>${formatNumber(score, 2)}</span>`;
}

/** Several runs and evaluations on one page: reward curves, Sentient scores, scores per goal type. */
export function renderComparisonPage(input: ComparisonPageInput): string {
  const { targets } = input;
  const color = (i: number) => PALETTE[i % PALETTE.length] ?? SERIES.ink;
  const legendItems: LegendItem[] = targets.map((t, i) => ({ name: t.name, color: color(i) }));
  const runs = targets.map((t, i) => ({ t, i })).filter((x) => x.t.kind === 'run');
  const common = { width: 1100, height: 300, integerX: true, xLabel: 'step', hover: true };

  const rewardSeries: LineSeries[] = runs.flatMap(({ t, i }) =>
    t.kind === 'run'
      ? [{ name: t.name, color: color(i), points: t.steps.map((s) => ({ x: s.step, y: s.reward.mean })) }]
      : [],
  );
  const rewardChart = rewardSeries.some((s) => s.points.length > 0)
    ? lineChart({ ...common, ariaLabel: 'Reward over steps, per run', series: rewardSeries, yDomain: [0, 1] })
    : empty('None of these runs has recorded a step yet.');

  // Runs draw their score curve over steps; a lone evaluation draws a dashed level line.
  const stepsSeen = runs.flatMap(({ t }) => (t.kind === 'run' ? t.steps.map((s) => s.step) : []));
  const scoreSeries: LineSeries[] = targets.map((t, i): LineSeries => {
    if (t.kind === 'run') {
      const points = runEvalPoints(t.steps, t.evaluations).flatMap((p) =>
        p.step === null ? [] : [{ x: p.step, y: p.score }],
      );
      return { name: t.name, color: color(i), points };
    }
    const xs = stepsSeen.length > 0 ? [Math.min(...stepsSeen), Math.max(...stepsSeen)] : [0, 1];
    return { name: t.name, color: color(i), dashed: true, points: xs.map((x) => ({ x, y: t.report.score })) };
  });
  const scoreChart = scoreSeries.some((s) => s.points.length > 0)
    ? lineChart({
        ...common,
        ariaLabel: 'Sentient score, per run and evaluation',
        series: scoreSeries,
        yDomain: [0, 100],
        yLabel: 'Sentient score',
        bands: SCORE_BANDS,
      })
    : empty('No evaluation among these targets yet.');

  const scored = targets.map((t) => ({ t, e: scoredEvaluation(t) }));
  const goalTypes = [...new Set(scored.flatMap(({ e }) => (e ? Object.keys(e.byGoalType) : [])))].sort();
  const summaryTable = html`<div class="table-wrap"><table class="compare-summary">
<thead><tr><th>Run or evaluation</th><th>Evaluation shown</th><th class="num">Score</th><th class="num">Success</th><th class="num">Failure</th><th class="num">Dialogues</th><th class="num">Last reward</th><th>Created</th></tr></thead>
<tbody>${scored.map(({ t, e }, i) => {
    const lastReward = t.kind === 'run' ? t.steps[t.steps.length - 1]?.reward.mean : undefined;
    return html`<tr><td><span class="swatch line" style="background:${color(i)}"></span> <b>${t.name}</b> <span class="muted">${t.kind}</span></td><td>${e ? e.evalId : '–'}${e && e.step !== null ? html` <span class="muted">(step ${e.step})</span>` : ''}</td><td class="num">${scorePill(e?.score)}</td><td class="num">${e?.success ?? '–'}</td><td class="num">${e?.failure ?? '–'}</td><td class="num">${e?.count ?? '–'}</td><td class="num">${lastReward === undefined ? '–' : formatNumber(lastReward, 3)}</td><td class="muted">${formatTime(e?.createdAt)}</td></tr>`;
  })}</tbody></table></div>`;
  const goalTable =
    goalTypes.length === 0
      ? empty('No evaluation among these targets yet.')
      : html`<div class="table-wrap"><table class="compare-goals">
<thead><tr><th>Goal type</th>${scored.map(({ t }) => html`<th class="num">${t.name}</th>`)}</tr></thead>
<tbody>${goalTypes.map((g) => html`<tr><td>${g}</td>${scored.map(({ e }) => html`<td class="num">${scorePill(e?.byGoalType[g]?.score)}</td>`)}</tr>`)}</tbody></table></div>`;

  const notes = input.notes ?? [];
  const names = targets.map((t) => t.name).join(' · ');
  const body = html`<header class="top"><div class="wrap">
<div class="brand">Attune <span>· comparison</span></div>
<h1>${names}</h1>
<div class="meta"><span><b>${runs.length}</b> run${runs.length === 1 ? '' : 's'}</span><span><b>${targets.length - runs.length}</b> evaluation${targets.length - runs.length === 1 ? '' : 's'}</span></div>
</div></header>
<main class="wrap">
${notes.length > 0 ? html`<div class="notes"><b>Notes</b><ul>${notes.map((n) => html`<li>${n}</li>`)}</ul></div>` : ''}
<section class="card" id="summary"><div class="card-head"><div><h2>Sentient scores</h2><p>for a run, its latest evaluation</p></div></div>${summaryTable}</section>
${figure(
  'Reward',
  'mean final emotion / 100 per step, one line per run',
  'reward',
  rewardChart,
  legendItems.filter((_, i) => targets[i]?.kind === 'run'),
  true,
)}
${figure('Sentient score', 'runs: the evaluations over steps; evaluations: their score as a dashed level', 'sentient-score', scoreChart, legendItems, true)}
<section class="card" id="goal-types"><div class="card-head"><div><h2>Per goal type</h2><p>Sentient score of each goal type's dialogues</p></div></div>${goalTable}</section>
<footer class="page"><span>reward = final emotion / 100</span><span>generated by attune report · ${input.generatedAt ?? new Date().toISOString()}</span></footer>
</main>`;
  return renderPage({ title: `${names} · comparison · Attune`, body });
}
