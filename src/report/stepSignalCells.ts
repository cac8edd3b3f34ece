/** The run page's step-table cells of per-turn credit, reply signals and the guardrails that tripped. */
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { formatPercent, html, type SafeHtml } from './html.js';

const dash = html`<span class="muted">–</span>`;

export const STEP_SIGNAL_HEADERS = html`<th class="num" data-sortable title="each assistant turn's own reward (emotion change / 100): mean ± std [min, max]; the turns' trained-on reward in the tooltip">Per-turn reward</th><th class="num" data-sortable title="reply length in characters: mean ± std; empty share, repetition and distinct bigrams in the tooltip">Reply length</th><th class="num" data-sortable title="share of empty or near-empty replies">Empty</th><th data-sortable>Guardrails</th>`;

export function stepSignalCells(s: StepMetricsRecord): SafeHtml {
  const t = s.turnReward;
  const r = s.turnReturn;
  const g = s.signals;
  const turnTitle = r
    ? `trained on ${r.mean.toFixed(3)} ± ${r.std.toFixed(3)} [${r.min.toFixed(3)}, ${r.max.toFixed(3)}]`
    : '';
  const replyTitle = g
    ? `repetition ${g.repetition.toFixed(3)} · distinct bigrams ${g.distinctBigrams.toFixed(3)}${g.evalChange !== undefined ? ` · eval change ${g.evalChange.toFixed(2)}` : ''}`
    : 'not recorded';
  const trips = s.guardrails ?? [];
  return html`<td class="num" data-v="${t?.mean ?? -1}" title="${turnTitle}">${t ? html`${t.mean.toFixed(3)}<span class="muted"> ± ${t.std.toFixed(2)} [${t.min.toFixed(2)}, ${t.max.toFixed(2)}]</span>` : dash}</td>
<td class="num" data-v="${g?.replyLengthMean ?? -1}" title="${replyTitle}">${g ? html`${g.replyLengthMean.toFixed(1)}<span class="muted"> ± ${g.replyLengthStd.toFixed(1)}</span>` : dash}</td>
<td class="num" data-v="${g?.emptyShare ?? -1}">${g ? formatPercent(g.emptyShare) : dash}</td>
<td data-v="${trips.length}" title="${trips.map((x) => x.message).join('\n')}">${trips.length === 0 ? dash : trips.map((x) => html`<b>${x.rule}</b> (${x.action}) `)}</td>`;
}
