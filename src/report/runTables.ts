/** The run page's tables: one row per step (newest first) and one per evaluation of the run. */
import { emotionState } from '../core/emotion.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { empty } from './cards.js';
import { formatNumber, formatPercent, formatTime, html, type SafeHtml } from './html.js';
import { OFF_POLICY_HEADERS, offPolicyCells } from './offPolicyCells.js';
import type { RunEvalPoint } from './runEvalPoints.js';
import { STEP_SIGNAL_HEADERS, stepSignalCells } from './stepSignalCells.js';

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

/** Table numbers: fixed decimals so columns line up; tiny values in exponent form. */
function fixed(value: number | null | undefined, digits: number): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (value !== 0 && Math.abs(value) < 10 ** -digits) return value.toExponential(1);
  return value.toFixed(digits);
}

function stepRow(s: StepMetricsRecord): SafeHtml {
  return html`<tr>
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
</tr>`;
}

/** Every recorded step, newest first, sortable by any column. */
export function stepTable(steps: StepMetricsRecord[]): SafeHtml {
  if (steps.length === 0) return empty('No steps recorded yet.');
  return html`<div class="table-wrap tall"><table class="sortable steps">
<thead><tr><th class="num" data-sortable>Step</th><th data-sortable>Sampled from</th><th class="num" data-sortable>Reward ± std</th><th class="num" data-sortable>Success</th><th class="num" data-sortable>Failure</th><th class="num" data-sortable>Malformed</th><th class="num" data-sortable>Turns</th><th class="num" data-sortable>Loss</th><th class="num" data-sortable>KL</th><th class="num" data-sortable>Entropy</th><th class="num" data-sortable>Grad norm</th><th class="num" data-sortable title="max |sampler − trainer| log-prob over completion tokens">Log-prob gap</th>${OFF_POLICY_HEADERS}${STEP_SIGNAL_HEADERS}<th class="num" data-sortable>Rollouts</th><th class="num" data-sortable title="the publish's start to the new version's first token on vLLM, on the publisher's clock">Publish ms</th><th class="num" data-sortable>Eval</th><th data-sortable>Time (UTC)</th></tr></thead>
<tbody>${[...steps].reverse().map(stepRow)}</tbody></table></div>`;
}

function evaluationRow(e: RunEvalPoint): SafeHtml {
  return html`<tr><td data-v="${e.evalId}">${e.evalId}</td><td class="num" data-v="${e.step ?? -1}">${e.step ?? '–'}</td><td class="num" data-v="${e.score}"><span class="emo-pill st-${emotionState(e.score)}"><span class="state">${emotionState(e.score)}</span>${formatNumber(e.score, 2)}</span></td><td class="num" data-v="${e.success}">${e.success}</td><td class="num" data-v="${e.failure}">${e.failure}</td><td class="num" data-v="${e.count}">${e.count}</td><td class="num" data-v="${e.failed ?? -1}">${e.failed ?? '–'}</td><td class="muted" data-v="${e.createdAt ?? ''}">${formatTime(e.createdAt)}</td></tr>`;
}

/** The card listing the run's evaluations; nothing when it has none. */
export function evaluationsCard(evals: RunEvalPoint[]): SafeHtml | '' {
  if (evals.length === 0) return '';
  return html`<section class="card" id="evaluations">
  <div class="card-head"><div><h2>Evaluations</h2><p>${evals.length} evaluation${evals.length === 1 ? '' : 's'} of this run; <code>attune report EVAL-ID</code> shows one in full</p></div></div>
  <div class="table-wrap"><table class="sortable evals">
  <thead><tr><th data-sortable>Evaluation</th><th class="num" data-sortable>Step</th><th class="num" data-sortable>Score</th><th class="num" data-sortable>Success</th><th class="num" data-sortable>Failure</th><th class="num" data-sortable>Dialogues</th><th class="num" data-sortable>Failed</th><th data-sortable>Created</th></tr></thead>
  <tbody>${evals.map(evaluationRow)}</tbody>
  </table></div>
</section>`;
}
