/** The run page's step-table cells of a step's off-policy figures: staleness and importance weights. */
import { meanStaleness, offPolicyFigures, stalenessText } from '../core/offPolicyFigures.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { formatPercent, html, type SafeHtml } from './html.js';

const dash = html`<span class="muted">–</span>`;

const weight = (value: number) => (value !== 0 && Math.abs(value) < 1e-3 ? value.toExponential(1) : value.toFixed(3));

export const OFF_POLICY_HEADERS = html`<th class="num" data-sortable title="samples per staleness (steps between the sampled version and the weights trained)">Staleness</th><th class="num" data-sortable title="sampler-to-trainer importance weight before truncation: mean / max">IS weight</th><th class="num" data-sortable title="share of weighed tokens whose importance weight was truncated">Truncated</th>`;

export function offPolicyCells(s: StepMetricsRecord): SafeHtml {
  const f = offPolicyFigures(s.trainer);
  const staleness = stalenessText(f.stalenessHistogram);
  const missing = s.trainer?.is_weight_mean === undefined ? 'not reported by the trainer' : 'no sampler log-probs';
  return html`<td class="num" data-v="${meanStaleness(f.stalenessHistogram) ?? -1}" title="${staleness === null ? 'not reported by the trainer' : 'staleness: samples'}">${staleness ?? dash}</td>
<td class="num" data-v="${f.isWeightMean ?? -1}" title="${f.isWeightMean === null ? missing : 'mean / max'}">${f.isWeightMean === null ? dash : weight(f.isWeightMean)}${f.isWeightMax === null ? '' : html`<span class="muted"> / ${weight(f.isWeightMax)}</span>`}</td>
<td class="num" data-v="${f.isTruncatedShare ?? -1}">${f.isTruncatedShare === null ? dash : formatPercent(f.isTruncatedShare, 1)}</td>`;
}
