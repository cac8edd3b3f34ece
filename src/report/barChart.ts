/** Horizontal bar charts as static SVG (the breakdowns of an evaluation by goal type and personality). */
import { CHART_FONT_SIZE, formatChartNumber, niceTicks } from './charts.js';
import { escapeHtml, raw, type SafeHtml } from './html.js';

export interface BarRow {
  label: string;
  value: number;
  color: string;
  /** Text to the right of the bar (counts, success/failure). */
  note?: string;
  title?: string;
  /** An error bar over the bar (a confidence interval on the same scale). */
  interval?: { low: number; high: number };
}

export interface BarChartOptions {
  rows: BarRow[];
  ariaLabel: string;
  max?: number;
  width?: number;
  /** A dashed reference line (e.g. the overall score). */
  ref?: { value: number; label: string };
  valueFormat?: (value: number) => string;
}

/** Horizontal bars on a 0..max scale, one row per label. */
export function barChart(options: BarChartOptions): SafeHtml {
  const width = options.width ?? 540;
  const rowHeight = 34;
  const max = options.max ?? Math.max(1, ...options.rows.map((r) => r.value));
  const labelWidth = Math.min(200, Math.max(60, ...options.rows.map((r) => r.label.length * 7.4 + 12)));
  const noteWidth = Math.min(170, Math.max(0, ...options.rows.map((r) => (r.note ?? '').length * 6.6 + 14)));
  const left = labelWidth;
  const right = width - noteWidth - 44;
  const top = options.ref ? 22 : 6;
  const height = top + options.rows.length * rowHeight + 24;
  const scale = (v: number) => left + (Math.max(0, Math.min(max, v)) / max) * (right - left);
  const format = options.valueFormat ?? formatChartNumber;
  const parts: string[] = [];
  for (const t of niceTicks(0, max, 4)) {
    const x = scale(t).toFixed(1);
    parts.push(`<line class="grid" x1="${x}" x2="${x}" y1="${top}" y2="${height - 20}"/>`);
    parts.push(
      `<text class="tick" x="${x}" y="${height - 6}" text-anchor="middle">${escapeHtml(formatChartNumber(t))}</text>`,
    );
  }
  options.rows.forEach((row, i) => {
    const y = top + i * rowHeight;
    const barY = y + 8;
    const barH = rowHeight - 16;
    const w = Math.max(0, scale(row.value) - left);
    parts.push(`<g class="bar-row"><title>${escapeHtml(row.title ?? `${row.label}: ${format(row.value)}`)}</title>`);
    parts.push(
      `<text class="bar-label" x="${left - 10}" y="${(barY + barH / 2 + 4).toFixed(1)}" text-anchor="end">${escapeHtml(row.label)}</text>`,
    );
    parts.push(
      `<rect class="bar-track" x="${left}" y="${barY}" width="${(right - left).toFixed(1)}" height="${barH}" rx="4"/>`,
    );
    parts.push(
      `<rect class="bar" x="${left}" y="${barY}" width="${w.toFixed(1)}" height="${barH}" rx="4" fill="${escapeHtml(row.color)}"/>`,
    );
    parts.push(
      `<text class="bar-value" x="${(left + w + 6).toFixed(1)}" y="${(barY + barH / 2 + 4).toFixed(1)}">${escapeHtml(format(row.value))}</text>`,
    );
    if (row.interval && Number.isFinite(row.interval.low) && Number.isFinite(row.interval.high)) {
      const [x1, x2] = [scale(row.interval.low).toFixed(1), scale(row.interval.high).toFixed(1)];
      const mid = barY + barH / 2;
      const [capTop, capBottom] = [(mid - 5).toFixed(1), (mid + 5).toFixed(1)];
      parts.push(
        `<path class="err" d="M${x1} ${mid}H${x2}M${x1} ${capTop}V${capBottom}M${x2} ${capTop}V${capBottom}" stroke="#1f2328" stroke-width="1.5" fill="none"/>`,
      );
    }
    if (row.note)
      parts.push(
        `<text class="bar-note" x="${right + 44}" y="${(barY + barH / 2 + 4).toFixed(1)}">${escapeHtml(row.note)}</text>`,
      );
    parts.push('</g>');
  });
  if (options.ref && options.ref.value >= 0 && options.ref.value <= max) {
    const x = scale(options.ref.value).toFixed(1);
    parts.push(`<line class="ref" x1="${x}" x2="${x}" y1="${top - 4}" y2="${height - 20}"/>`);
    parts.push(
      `<text class="ref-label" x="${x}" y="${top - 8}" text-anchor="middle">${escapeHtml(options.ref.label)}</text>`,
    );
  }
  return raw(
    `<svg class="chart bars" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(options.ariaLabel)}" font-size="${CHART_FONT_SIZE}">${parts.join('')}</svg>`,
  );
}
