/** The sparkline: a tiny static SVG line for tables and headers, drawn without JavaScript. */
import { escapeHtml, html, raw, type SafeHtml } from './html.js';

/** A tiny line for tables and headers: emotion 0..100 over turns. */
export function sparkline(
  values: number[],
  options: {
    width?: number;
    height?: number;
    min?: number;
    max?: number;
    color?: string;
    title?: string;
    baseline?: number;
  } = {},
): SafeHtml {
  const width = options.width ?? 96;
  const height = options.height ?? 24;
  const min = options.min ?? 0;
  const max = options.max ?? 100;
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0)
    return html`<svg class="spark" width="${width}" height="${height}" aria-hidden="true"></svg>`;
  const n = Math.max(1, finite.length - 1);
  const sx = (i: number) => 2 + (i / n) * (width - 4);
  const sy = (v: number) => height - 2 - ((Math.max(min, Math.min(max, v)) - min) / (max - min || 1)) * (height - 4);
  const d = finite.map((v, i) => `${i === 0 ? 'M' : 'L'}${sx(i).toFixed(1)},${sy(v).toFixed(1)}`).join('');
  const last = finite[finite.length - 1] ?? 0;
  const color = escapeHtml(options.color ?? '#1f2937');
  const base = options.baseline ?? finite[0] ?? 0;
  return raw(
    `<svg class="spark" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(options.title ?? finite.join(', '))}"><line x1="2" x2="${width - 2}" y1="${sy(base).toFixed(1)}" y2="${sy(base).toFixed(1)}" class="spark-base"/><path d="${d}" fill="none" stroke="${color}" stroke-width="1.6" stroke-linejoin="round"/><circle cx="${sx(finite.length - 1).toFixed(1)}" cy="${sy(last).toFixed(1)}" r="2.4" fill="${color}"/></svg>`,
  );
}
