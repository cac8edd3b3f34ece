import { emotionState } from '../core/emotion.js';
import type { EvaluationReport } from '../core/evaluationReport.js';
import { latestPublishedVersion, type StepMetricsRecord } from '../core/runMetrics.js';
import { lineChart, type LineSeries } from './charts.js';
import { formatInt, formatNumber, formatPercent, formatTime, html, type SafeHtml } from './html.js';
import { empty, figure } from './cards.js';
import { OFF_POLICY_HEADERS, offPolicyCells } from './offPolicyCells.js';
import { STEP_SIGNAL_HEADERS, stepSignalCells } from './stepSignalCells.js';
import { renderPage } from './page.js';
import { SERIES, STATE_COLORS } from './theme.js';

export interface RunPageInput {
  run: string;
  /** One record per step (the last one wins when a step was recorded twice), in step order. */
  steps: StepMetricsRecord[];
  /** Evaluations whose runName is this run. */
  evaluations: EvaluationReport[];
  notes?: string[];
  generatedAt?: string;
}

/** A point on the Sentient-score curve, from an evaluation file or a step's `eval` field. */
export interface RunEvalPoint {
  evalId: string;
  step: number | null;
  score: number;
  success: number;
  failure: number;
  count: number;
  failed: number | null;
  createdAt: string | null;
}

export function runEvalPoints(steps: StepMetricsRecord[], evaluations: EvaluationReport[]): RunEvalPoint[] {
  const points = new Map<string, RunEvalPoint>();
  for (const e of evaluations) {
    points.set(e.evalId, {
      evalId: e.evalId,
      step: e.step,
      score: e.score,
      success: e.success,
      failure: e.failure,
      count: e.count,
      failed: e.failed,
      createdAt: e.createdAt,
    });
  }
  for (const s of steps) {
    if (!s.eval || points.has(s.eval.evalId)) continue;
    points.set(s.eval.evalId, {
      evalId: s.eval.evalId,
      step: s.step,
      score: s.eval.score,
      success: s.eval.success,
      failure: s.eval.failure,
      count: s.eval.count,
      failed: null,
      createdAt: null,
    });
  }
  return [...points.values()].sort(
    (a, b) => (a.step ?? -1) - (b.step ?? -1) || (a.createdAt ?? '').localeCompare(b.createdAt ?? ''),
  );
}

function finite(value: number | null | undefined): number | null {
  return value === null || value === undefined || !Number.isFinite(value) ? null : value;
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

function stat(label: string, value: SafeHtml | string | number, detail: SafeHtml | string, state?: string): SafeHtml {
  return html`<div class="stat${state ? ` st-${state}` : ''}"><div class="k">${label}</div><div class="v">${value}</div><div class="d">${detail}</div></div>`;
}

/** Table numbers: fixed decimals so columns line up; tiny values in exponent form. */
/** The step's gap figures in words, for the table cell's tooltip. */
function gapTitle(s: StepMetricsRecord): string {
  const t = s.trainer;
  if (t?.retokenized_share === undefined) return 'not reported by the trainer';
  const gap =
    t.logprob_gap_max != null
      ? `max ${t.logprob_gap_max.toExponential(2)}, mean ${(t.logprob_gap_mean ?? 0).toExponential(2)}`
      : 'no sampler log-probs';
  return `${gap}; ${formatPercent(t.retokenized_share)} of samples re-tokenised`;
}

function fixed(value: number | null | undefined, digits: number): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (value !== 0 && Math.abs(value) < 10 ** -digits) return value.toExponential(1);
  return value.toFixed(digits);
}

// eslint-disable-next-line max-lines-per-function -- still to split
export function renderRunPage(input: RunPageInput): string {
  const { run, steps } = input;
  const evals = runEvalPoints(steps, input.evaluations);
  const plotted = evals.filter((e): e is RunEvalPoint & { step: number } => e.step !== null);
  const last = steps[steps.length - 1];
  const stepXs = steps.map((s) => s.step);
  const evalXs = plotted.map((e) => e.step);
  const allX = [...stepXs, ...evalXs];
  const xDomain: [number, number] | undefined = allX.length > 0 ? [Math.min(...allX), Math.max(...allX)] : undefined;
  const many = steps.length >= 20;
  const common = {
    width: 1100,
    height: 300,
    integerX: true,
    xLabel: 'step',
    hover: true,
    ...(xDomain ? { xDomain } : {}),
  };
  const half = { ...common, width: 540, height: 260 };
  const pts = (pick: (s: StepMetricsRecord) => number | null | undefined) =>
    steps.map((s) => ({ x: s.step, y: finite(pick(s)) }));

  // Reward: mean with a ±std band, min/max dotted, and a smoothed mean when there are many steps.
  const rewardSeries: LineSeries[] = [
    {
      name: 'max',
      color: SERIES.grey,
      points: pts((s) => s.reward.max),
      width: 1,
      dashed: true,
      opacity: 0.6,
      markers: false,
    },
    {
      name: 'min',
      color: SERIES.grey,
      points: pts((s) => s.reward.min),
      width: 1,
      dashed: true,
      opacity: 0.6,
      markers: false,
    },
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
    rewardSeries.push({
      name: 'smoothed mean',
      color: SERIES.ink,
      points: steps.map((s, i) => ({ x: s.step, y: sm[i] ?? null })),
      width: 2.4,
      markers: false,
    });
  }
  const rewardChart =
    steps.length === 0
      ? empty('No steps recorded yet.')
      : lineChart({
          ...common,
          ariaLabel: 'Reward over steps',
          series: rewardSeries,
          yDomain: [0, 1],
          yLabel: 'reward',
          yFormat: (v) => v.toFixed(1),
        });

  const scoreChart =
    plotted.length === 0
      ? empty('No evaluation of this run yet: a run that evaluates every k steps draws its Sentient-score curve here.')
      : lineChart({
          ...common,
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

  const rateSeries: LineSeries[] = [
    { name: 'success', color: STATE_COLORS.S.fg, points: pts((s) => s.successRate) },
    { name: 'failure', color: STATE_COLORS.F.fg, points: pts((s) => s.failureRate) },
    { name: 'malformed', color: SERIES.grey, points: pts((s) => s.malformedRate), dashed: true },
  ];
  const rateChart =
    steps.length === 0
      ? empty('No steps recorded yet.')
      : lineChart({
          ...common,
          ariaLabel: 'Success, failure and malformed rates over steps',
          series: rateSeries,
          yDomain: [0, 1],
          yLabel: 'share of dialogues',
          yFormat: (v) => `${Math.round(v * 100)}%`,
        });

  const small = (title: string, caption: string, png: string, series: LineSeries[]) => {
    const hasData = series.some((s) => s.points.some((p) => p.y !== null));
    return figure(
      title,
      caption,
      png,
      hasData ? lineChart({ ...half, ariaLabel: title, series }) : empty('No values recorded.'),
      series.map((s) => ({ name: s.name, color: s.color, ...(s.dashed ? { dashed: true } : {}) })),
    );
  };

  const bestEval = plotted.reduce<RunEvalPoint | null>(
    (best, e) => (best === null || e.score > best.score ? e : best),
    null,
  );
  const latestEval = plotted[plotted.length - 1];
  const algorithms = [...new Set(steps.map((s) => s.algorithm))];

  const stepTable =
    steps.length === 0
      ? empty('No steps recorded yet.')
      : html`<div class="table-wrap tall"><table class="sortable steps">
<thead><tr><th class="num" data-sortable>Step</th><th data-sortable>Sampled from</th><th class="num" data-sortable>Reward ± std</th><th class="num" data-sortable>Success</th><th class="num" data-sortable>Failure</th><th class="num" data-sortable>Malformed</th><th class="num" data-sortable>Turns</th><th class="num" data-sortable>Loss</th><th class="num" data-sortable>KL</th><th class="num" data-sortable>Entropy</th><th class="num" data-sortable>Grad norm</th><th class="num" data-sortable title="max |sampler − trainer| log-prob over completion tokens">Log-prob gap</th>${OFF_POLICY_HEADERS}${STEP_SIGNAL_HEADERS}<th class="num" data-sortable>Rollouts</th><th class="num" data-sortable title="the publish's start to the new version's first token on vLLM, on the publisher's clock">Publish ms</th><th class="num" data-sortable>Eval</th><th data-sortable>Time (UTC)</th></tr></thead>
<tbody>${[...steps].reverse().map(
          (s) => html`<tr>
<td class="num" data-v="${s.step}"><b>${s.step}</b></td>
<td class="muted" data-v="${s.policyVersion}">${s.policyVersion}</td>
<td class="num" data-v="${s.reward.mean}">${fixed(s.reward.mean, 3)}<span class="muted"> ± ${fixed(s.reward.std, 2)}</span></td>
<td class="num" data-v="${s.successRate}">${formatPercent(s.successRate)}</td>
<td class="num" data-v="${s.failureRate}">${formatPercent(s.failureRate)}</td>
<td class="num" data-v="${s.malformedRate}">${formatPercent(s.malformedRate)}</td>
<td class="num" data-v="${s.meanTurns}">${fixed(s.meanTurns, 1)}</td>
<td class="num" data-v="${s.trainer?.loss}">${fixed(s.trainer?.loss, 4)}</td>
<td class="num" data-v="${s.trainer?.kl}">${fixed(s.trainer?.kl, 4)}</td>
<td class="num" data-v="${s.trainer?.entropy}">${fixed(s.trainer?.entropy, 3)}</td>
<td class="num" data-v="${s.trainer?.grad_norm}" title="clip fraction ${fixed(s.trainer?.clip_fraction, 3)}">${fixed(s.trainer?.grad_norm, 3)}</td>
<td class="num" data-v="${s.trainer?.logprob_gap_max ?? -1}" title="${gapTitle(s)}">${s.trainer?.logprob_gap_max != null ? s.trainer.logprob_gap_max.toExponential(1) : html`<span class="muted">–</span>`}${s.trainer?.retokenized_share ? html`<span class="muted"> · ${formatPercent(s.trainer.retokenized_share)} re-tok.</span>` : ''}</td>
${offPolicyCells(s)}
${stepSignalCells(s)}
<td class="num" data-v="${s.rollouts.ok}" title="${s.rollouts.ok} ok, ${s.rollouts.failed} failed, ${s.rollouts.dropped} dropped">${s.rollouts.ok}${s.rollouts.failed + s.rollouts.dropped > 0 ? html`<span class="muted"> +${s.rollouts.failed + s.rollouts.dropped}✗</span>` : ''}</td>
<td class="num" data-v="${s.publishLatencyMs ?? -1}">${s.publishLatencyMs != null ? String(s.publishLatencyMs) : html`<span class="muted">–</span>`}</td>
<td class="num" data-v="${s.eval?.score ?? -1}">${s.eval ? html`<span class="emo-pill tinted st-${emotionState(s.eval.score)}">${fixed(s.eval.score, 1)}</span>` : html`<span class="muted">–</span>`}</td>
<td data-v="${s.time}" class="muted" title="${s.time}">${formatTime(s.time)
            .replace(/^\d{4}-/, '')
            .replace(/ UTC$/, '')}</td>
</tr>`,
        )}</tbody></table></div>`;

  const evalTable =
    evals.length === 0
      ? ''
      : html`<section class="card" id="evaluations">
  <div class="card-head"><div><h2>Evaluations</h2><p>${evals.length} evaluation${evals.length === 1 ? '' : 's'} of this run; <code>attune report EVAL-ID</code> shows one in full</p></div></div>
  <div class="table-wrap"><table class="sortable evals">
  <thead><tr><th data-sortable>Evaluation</th><th class="num" data-sortable>Step</th><th class="num" data-sortable>Score</th><th class="num" data-sortable>Success</th><th class="num" data-sortable>Failure</th><th class="num" data-sortable>Dialogues</th><th class="num" data-sortable>Failed</th><th data-sortable>Created</th></tr></thead>
  <tbody>${evals.map((e) => html`<tr><td data-v="${e.evalId}">${e.evalId}</td><td class="num" data-v="${e.step ?? -1}">${e.step ?? '–'}</td><td class="num" data-v="${e.score}"><span class="emo-pill st-${emotionState(e.score)}"><span class="state">${emotionState(e.score)}</span>${formatNumber(e.score, 2)}</span></td><td class="num" data-v="${e.success}">${e.success}</td><td class="num" data-v="${e.failure}">${e.failure}</td><td class="num" data-v="${e.count}">${e.count}</td><td class="num" data-v="${e.failed ?? -1}">${e.failed ?? '–'}</td><td class="muted" data-v="${e.createdAt ?? ''}">${formatTime(e.createdAt)}</td></tr>`)}</tbody>
  </table></div>
</section>`;

  const notes = input.notes ?? [];
  const body = html`<header class="top"><div class="wrap">
<div class="brand">Attune <span>· training run report</span></div>
<h1>${run}</h1>
<div class="meta">${algorithms.length > 0 ? html`<span>algorithm <b>${algorithms.join(', ').toUpperCase()}</b></span>` : ''}<span><b>${steps.length}</b> step${steps.length === 1 ? '' : 's'} recorded</span>${last ? html`<span>latest version <b>${latestPublishedVersion(run, steps)}</b></span><span>step ${last.step} sampled from <b>${last.policyVersion}</b></span><span>last step ${formatTime(last.time)}</span>` : ''}<span><b>${evals.length}</b> evaluation${evals.length === 1 ? '' : 's'}</span></div>
</div></header>
<main class="wrap">
${notes.length > 0 ? html`<div class="notes"><b>Notes</b><ul>${notes.map((n) => html`<li>${n}</li>`)}</ul></div>` : ''}
<section class="stats run-stats">
  ${stat('Reward', last ? html`${formatNumber(last.reward.mean, 3)}<small> ± ${formatNumber(last.reward.std, 2)}</small>` : '–', last ? `step ${last.step}; first ${formatNumber(steps[0]?.reward.mean, 3)}` : 'no steps yet', last ? emotionState(last.reward.mean * 100) : undefined)}
  ${stat('Sentient score', latestEval ? html`${formatNumber(latestEval.score, 1)}<small> / 100</small>` : '–', bestEval && latestEval ? `step ${latestEval.step}; best ${formatNumber(bestEval.score, 1)} at step ${bestEval.step}` : 'no evaluation yet', latestEval ? emotionState(latestEval.score) : undefined)}
  ${stat('Success rate', last ? formatPercent(last.successRate) : '–', last ? `failure ${formatPercent(last.failureRate)} · malformed ${formatPercent(last.malformedRate)}` : '', 'S')}
  ${stat('KL', last ? formatNumber(last.trainer?.kl, 4) : '–', last ? `entropy ${formatNumber(last.trainer?.entropy, 3)}` : '')}
  ${stat('Loss', last ? formatNumber(last.trainer?.loss, 4) : '–', last ? `policy ${formatNumber(last.trainer?.policy_loss, 4)} · value ${formatNumber(last.trainer?.value_loss, 4)}` : '')}
  ${stat('Rollouts', last ? formatInt(steps.reduce((n, s) => n + s.rollouts.ok, 0)) : '–', last ? `mean turns ${formatNumber(last.meanTurns, 1)} at step ${last.step}` : '')}
</section>
${figure('Reward', `mean final emotion / 100 per step${steps.length > 0 ? '; band: ± one standard deviation; dashed: min and max' : ''}${many ? '; dark: smoothed' : ''}`, 'reward', rewardChart, [{ name: 'mean', color: SERIES.blue }, { name: 'min / max', color: SERIES.grey, dashed: true }, ...(many ? [{ name: 'smoothed', color: SERIES.ink }] : [])], true)}
${figure('Sentient score', 'mean final emotion over the evaluation scenarios, from the evaluations of this run', 'sentient-score', scoreChart, [], true)}
${figure(
  'Success and failure rates',
  "share of the step's dialogues reaching 100, ending below 10, and with malformed policy output",
  'success-failure',
  rateChart,
  rateSeries.map((s) => ({ name: s.name, color: s.color, ...(s.dashed ? { dashed: true } : {}) })),
  true,
)}
<section class="grid2">
${small('KL divergence', 'to the reference policy', 'kl', [{ name: 'KL', color: SERIES.teal, points: pts((s) => s.trainer?.kl) }])}
${small('Loss', 'total, policy and value loss', 'loss', [
  { name: 'loss', color: SERIES.ink, points: pts((s) => s.trainer?.loss) },
  { name: 'policy', color: SERIES.blue, points: pts((s) => s.trainer?.policy_loss) },
  { name: 'value', color: SERIES.orange, points: pts((s) => s.trainer?.value_loss), dashed: true },
])}
${small('Entropy', 'mean token entropy of the policy', 'entropy', [{ name: 'entropy', color: SERIES.violet, points: pts((s) => s.trainer?.entropy) }])}
${small('Gradient norm and clipping', 'gradient norm before clipping; share of clipped ratios', 'grad-norm', [
  { name: 'grad norm', color: SERIES.pink, points: pts((s) => s.trainer?.grad_norm) },
  { name: 'clip fraction', color: SERIES.grey, points: pts((s) => s.trainer?.clip_fraction), dashed: true },
])}
${
  steps.some((s) => finite(s.trainer?.logprob_gap_max) !== null)
    ? small(
        'Sampler–trainer log-prob gap',
        'mean and max |sampler − trainer| log-prob over the sampled tokens, before the update (fp32: about 0)',
        'logprob-gap',
        [
          { name: 'max gap', color: SERIES.orange, points: pts((s) => s.trainer?.logprob_gap_max) },
          { name: 'mean gap', color: SERIES.blue, points: pts((s) => s.trainer?.logprob_gap_mean) },
        ],
      )
    : ''
}
${
  steps.some((s) => finite(s.trainer?.is_weight_mean) !== null)
    ? small(
        'Importance weights',
        'mean sampler-to-trainer importance weight before truncation (on-policy: about 1)',
        'is-weight',
        [{ name: 'IS weight mean', color: SERIES.teal, points: pts((s) => s.trainer?.is_weight_mean) }],
      )
    : ''
}
${
  steps.some((s) => finite(s.publishLatencyMs) !== null)
    ? small(
        'Publish latency',
        "ms from the publish's start to the first token vLLM serves from the step's adapter",
        'publish-latency',
        [{ name: 'publish ms', color: SERIES.orange, points: pts((s) => s.publishLatencyMs) }],
      )
    : ''
}
</section>
<section class="card" id="steps">
  <div class="card-head"><div><h2>Steps</h2><p>newest first; click a header to sort</p></div></div>
  ${stepTable}
</section>
${evalTable}
<footer class="page"><span>reward = final emotion / 100</span><span>emotion states: S 100 · A ≥70 · B ≥40 · C ≥10 · F &lt;10</span><span>generated by attune report · ${input.generatedAt ?? new Date().toISOString()}</span></footer>
</main>`;
  return renderPage({ title: `${run} · training run · Attune`, body });
}
