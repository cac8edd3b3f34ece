/** The page's building blocks shared by the run and comparison pages: chart cards, legends, empty states. */
import { html, type SafeHtml } from './html.js';

export interface LegendItem {
  name: string;
  color: string;
  dashed?: boolean;
}

/** The legend of a chart's series: their names and colours, dashed where the line is. */
export const legendItemsOf = (series: readonly { name: string; color: string; dashed?: boolean | undefined }[]) =>
  series.map((s): LegendItem => ({ name: s.name, color: s.color, ...(s.dashed ? { dashed: true } : {}) }));

export function legend(series: LegendItem[]): SafeHtml {
  return html`<div class="legend">${series.map((s) => html`<span><span class="swatch ${s.dashed ? 'dash' : 'line'}" style="${s.dashed ? `color:${s.color}` : `background:${s.color}`}"></span>${s.name}</span>`)}</div>`;
}

export function figure(
  title: string,
  caption: string,
  png: string,
  chart: SafeHtml,
  legendItems: LegendItem[] = [],
  wide = false,
): SafeHtml {
  return html`<figure class="card${wide ? ' wide' : ''}" data-png="${png}">
  <div class="card-head"><div><h2>${title}</h2><p>${caption}</p></div>${legendItems.length > 1 ? legend(legendItems) : ''}</div>
  <div class="chart-box">${chart}</div>
</figure>`;
}

export const empty = (what: string) => html`<div class="empty">${what}</div>`;
