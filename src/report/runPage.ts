import { emotionState } from '../core/emotion.js';
import type { EvaluationReport } from '../core/evaluationReport.js';
import { latestPublishedVersion, type StepMetricsRecord } from '../core/runMetrics.js';
import { formatInt, formatNumber, formatPercent, formatTime, html, type SafeHtml } from './html.js';
import { renderPage } from './page.js';
import { rateFigure, rewardFigure, runChartData, scoreFigure, trainerFigures } from './runCharts.js';
import { simulatorGapFigure } from './simulatorGapFigure.js';
import { capabilityFigure } from './capabilityFigure.js';
import { environmentCard } from './runEnvironment.js';
import { runEvalPoints, type RunEvalPoint } from './runEvalPoints.js';
import { evaluationsCard, stepTable } from './runTables.js';

export interface RunPageInput {
  run: string;
  /** One record per step (the last one wins when a step was recorded twice), in step order. */
  steps: StepMetricsRecord[];
  /** Evaluations whose runName is this run. */
  evaluations: EvaluationReport[];
  notes?: string[];
  generatedAt?: string;
}

function stat(label: string, value: SafeHtml | string | number, detail: SafeHtml | string, state?: string): SafeHtml {
  return html`<div class="stat${state ? ` st-${state}` : ''}"><div class="k">${label}</div><div class="v">${value}</div><div class="d">${detail}</div></div>`;
}

/** The run's name, algorithm, step count, versions and evaluation count. */
function runHeader(run: string, steps: StepMetricsRecord[], evals: RunEvalPoint[]): SafeHtml {
  const last = steps[steps.length - 1];
  const algorithms = [...new Set(steps.map((s) => s.algorithm))];
  return html`<header class="top"><div class="wrap">
<div class="brand">Attune <span>· training run report</span></div>
<h1>${run}</h1>
<div class="meta">${algorithms.length > 0 ? html`<span>algorithm <b>${algorithms.join(', ').toUpperCase()}</b></span>` : ''}<span><b>${steps.length}</b> step${steps.length === 1 ? '' : 's'} recorded</span>${last ? html`<span>latest version <b>${latestPublishedVersion(run, steps)}</b></span><span>step ${last.step} sampled from <b>${last.policyVersion}</b></span><span>last step ${formatTime(last.time)}</span>` : ''}<span><b>${evals.length}</b> evaluation${evals.length === 1 ? '' : 's'}</span></div>
</div></header>`;
}

/** The headline figures of the latest step and the latest and best evaluation. */
function runStats(steps: StepMetricsRecord[], plotted: (RunEvalPoint & { step: number })[]): SafeHtml {
  const last = steps[steps.length - 1];
  const bestEval = plotted.reduce<RunEvalPoint | null>(
    (best, e) => (best === null || e.score > best.score ? e : best),
    null,
  );
  const latestEval = plotted[plotted.length - 1];
  return html`<section class="stats run-stats">
  ${stat('Reward', last ? html`${formatNumber(last.reward.mean, 3)}<small> ± ${formatNumber(last.reward.std, 2)}</small>` : '–', last ? `step ${last.step}; first ${formatNumber(steps[0]?.reward.mean, 3)}` : 'no steps yet', last ? emotionState(last.reward.mean * 100) : undefined)}
  ${stat('Sentient score', latestEval ? html`${formatNumber(latestEval.score, 1)}<small> / 100</small>` : '–', bestEval && latestEval ? `step ${latestEval.step}; best ${formatNumber(bestEval.score, 1)} at step ${bestEval.step}` : 'no evaluation yet', latestEval ? emotionState(latestEval.score) : undefined)}
  ${stat('Success rate', last ? formatPercent(last.successRate) : '–', last ? `failure ${formatPercent(last.failureRate)} · malformed ${formatPercent(last.malformedRate)}` : '', 'S')}
  ${stat('KL', last ? formatNumber(last.trainer?.kl, 4) : '–', last ? `entropy ${formatNumber(last.trainer?.entropy, 3)}` : '')}
  ${stat('Loss', last ? formatNumber(last.trainer?.loss, 4) : '–', last ? `policy ${formatNumber(last.trainer?.policy_loss, 4)} · value ${formatNumber(last.trainer?.value_loss, 4)}` : '')}
  ${stat('Rollouts', last ? formatInt(steps.reduce((n, s) => n + s.rollouts.ok, 0)) : '–', last ? `mean turns ${formatNumber(last.meanTurns, 1)} at step ${last.step}` : '')}
</section>`;
}

export function renderRunPage(input: RunPageInput): string {
  const { run, steps } = input;
  const evals = runEvalPoints(steps, input.evaluations);
  const plotted = evals.filter((e): e is RunEvalPoint & { step: number } => e.step !== null);
  const charts = runChartData(steps, plotted);
  // Runs without capability suites render exactly as before.
  const retention = capabilityFigure(charts);
  const notes = input.notes ?? [];
  const body = html`${runHeader(run, steps, evals)}
<main class="wrap">
${notes.length > 0 ? html`<div class="notes"><b>Notes</b><ul>${notes.map((n) => html`<li>${n}</li>`)}</ul></div>` : ''}
${runStats(steps, plotted)}
${rewardFigure(charts)}
${scoreFigure(charts)}${retention === '' ? '' : html`\n${retention}`}
${simulatorGapFigure(charts)}
${rateFigure(charts)}
${trainerFigures(charts)}
<section class="card" id="steps">
  <div class="card-head"><div><h2>Steps</h2><p>newest first; click a header to sort</p></div></div>
  ${stepTable(steps)}
</section>
${evaluationsCard(evals)}
${environmentCard(steps)}
<footer class="page"><span>reward = final emotion / 100</span><span>emotion states: S 100 · A ≥70 · B ≥40 · C ≥10 · F &lt;10</span><span>generated by attune report · ${input.generatedAt ?? new Date().toISOString()}</span></footer>
</main>`;
  return renderPage({ title: `${run} · training run · Attune`, body });
}
