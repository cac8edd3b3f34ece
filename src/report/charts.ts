/**
 * A small dependency-free SVG chart module: line charts (with bands, gaps, markers and a hover
 * crosshair the page script reads from `data-hover`); sparklines are in sparkline.ts, bar charts in barChart.ts.
 * Everything returned is static SVG, so charts show without JavaScript.
 */
import { escapeHtml, raw, type SafeHtml } from './html.js';

export interface Point {
  x: number;
  /** null (or a non-finite number) leaves a gap in the line. */
  y: number | null;
}

export interface LineSeries {
  name: string;
  color: string;
  points: Point[];
  width?: number;
  dashed?: boolean;
  opacity?: number;
  /** Draw a circle at every point (default: when the series has at most 40 points). */
  markers?: boolean;
  /** A shaded band (e.g. mean ± std) drawn under the line. */
  band?: { x: number; lo: number; hi: number }[];
  /** Extra class on the series group; `attrs` are added to it as data-* attributes. */
  className?: string;
  attrs?: Record<string, string>;
  /** Tooltip of the whole line (an SVG <title>, shown without JavaScript). */
  title?: string;
  /** Leave this series out of the hover read-out. */
  noHover?: boolean;
  /** An invisible wide stroke that makes a thin line easy to point at. */
  hitArea?: boolean;
  /** A white outline under the line, so it reads on top of many others. */
  halo?: boolean;
}

export interface YBand {
  from: number;
  to: number;
  color: string;
  label?: string;
}

export interface LineChartOptions {
  series: LineSeries[];
  ariaLabel: string;
  width?: number;
  height?: number;
  xDomain?: [number, number];
  yDomain?: [number, number];
  xLabel?: string;
  yLabel?: string;
  /** Only whole-number ticks on x (turns, steps). */
  integerX?: boolean;
  yFormat?: (value: number) => string;
  bands?: YBand[];
  refLines?: { y: number; label: string; color: string }[];
  /** Embed the data for the page script's crosshair read-out. */
  hover?: boolean;
  className?: string;
  /** Number of digits the hover read-out shows. */
  hoverDigits?: number;
}

export const CHART_FONT_SIZE = 12;

/** A number as chart labels show it: integers as they are, others to two decimals at most. */
export function formatChartNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Math.round(value * 100) / 100);
}

/** "Nice" tick values covering [min, max] (1, 2, 2.5, 5 × 10^k steps). */
export function niceTicks(min: number, max: number, count = 5, integer = false): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  if (max === min) return [min];
  const rough = (max - min) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(rough));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  if (integer) step = Math.max(1, Math.ceil(step));
  const ticks: number[] = [];
  const start = Math.ceil(min / step - 1e-9) * step;
  for (let v = start; v <= max + step * 1e-9; v += step) ticks.push(Math.round(v / step) * step);
  return ticks.map((t) => Number(t.toPrecision(12)));
}

/**
 * How an axis writes its ticks: the fewest decimals (or, for very small or large values, significant
 * digits in exponent form) at which every label reads back as its own tick. So no two labels repeat,
 * none rounds to a value it is not, and zero is "0", never "-0".
 */
export function tickFormat(ticks: number[]): (value: number) => string {
  const step = ticks.length > 1 ? Math.abs((ticks[1] ?? 0) - (ticks[0] ?? 0)) : Math.abs(ticks[0] ?? 1);
  const largest = Math.max(0, ...ticks.map((t) => Math.abs(t)));
  const exponent = largest >= 1e5 || (step > 0 && step < 1e-4);
  const write = (digits: number) => (value: number) => {
    const text = exponent ? value.toExponential(digits) : value.toFixed(digits);
    if (Number(text) !== 0) return text;
    return exponent ? '0' : text.replace(/^-/, '');
  };
  // Labels must be exact to a small share of the step (float noise aside).
  const tolerance = (step > 0 ? step : largest || 1) * 1e-6;
  for (let digits = exponent ? 1 : 0; digits < 17; digits++) {
    const format = write(digits);
    const labels = ticks.map(format);
    const faithful = ticks.every((t, i) => Math.abs(Number(labels[i]) - t) <= tolerance);
    if (faithful && new Set(labels).size === labels.length) return format;
  }
  return write(16);
}

function extent(values: number[]): [number, number] | null {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return null;
  return [Math.min(...finite), Math.max(...finite)];
}

function padDomain([lo, hi]: [number, number]): [number, number] {
  if (lo === hi) {
    const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
    return [lo - pad, hi + pad];
  }
  const pad = (hi - lo) * 0.06;
  return [lo - pad, hi + pad];
}

function isValue(y: number | null): y is number {
  return y !== null && Number.isFinite(y);
}

/** SVG path data for the series, a new segment after every gap. */
export function linePath(points: Point[], sx: (x: number) => number, sy: (y: number) => number): string {
  let d = '';
  let pen = false;
  for (const p of points) {
    if (!isValue(p.y) || !Number.isFinite(p.x)) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`;
    pen = true;
  }
  return d;
}

function attrsOf(attrs: Record<string, string> | undefined): string {
  if (!attrs) return '';
  return Object.entries(attrs)
    .filter(([key]) => /^[a-z][a-z0-9-]*$/.test(key))
    .map(([key, value]) => ` data-${key}="${escapeHtml(value)}"`)
    .join('');
}

/** Where the plot area lies in the chart and how data coordinates map onto it. */
interface ChartFrame {
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  x0: number;
  x1: number;
  y0: number;
  y1: number;
  sx: (x: number) => number;
  sy: (y: number) => number;
}

/** The chart's size, margins (room for the labels it has) and domains, padded when the data gives none. */
function chartFrame(options: LineChartOptions): ChartFrame {
  const width = options.width ?? 720;
  const height = options.height ?? 300;
  const margin = {
    left: options.yLabel ? 58 : 46,
    right: options.bands?.some((b) => b.label) ? 30 : 18,
    top: 14,
    bottom: options.xLabel ? 44 : 28,
  };
  const plot = { left: margin.left, top: margin.top, right: width - margin.right, bottom: height - margin.bottom };

  const xs = options.series.flatMap((s) => s.points.map((p) => p.x));
  const ys = options.series.flatMap((s) => [
    ...s.points.map((p) => p.y).filter(isValue),
    ...(s.band ?? []).flatMap((b) => [b.lo, b.hi]),
  ]);
  const xDomain = options.xDomain ?? padX(extent(xs) ?? [0, 1]);
  const yDomain = options.yDomain ?? padDomain(extent(ys) ?? [0, 1]);
  const [x0, x1] = xDomain[0] === xDomain[1] ? [xDomain[0] - 1, xDomain[1] + 1] : xDomain;
  const [y0, y1] = yDomain[0] === yDomain[1] ? padDomain(yDomain) : yDomain;
  const sx = (x: number) => plot.left + ((x - x0) / (x1 - x0)) * (plot.right - plot.left);
  const sy = (y: number) => plot.bottom - ((y - y0) / (y1 - y0)) * (plot.bottom - plot.top);
  return { width, height, plot, x0, x1, y0, y1, sx, sy };
}

interface AxisTicks {
  xTicks: number[];
  yTicks: number[];
  xFormat: (value: number) => string;
  yFormat: (value: number) => string;
}

/** Ticks inside each domain, about one per 70 px on x and per 48 px on y, and how they are written. */
function axisTicks(frame: ChartFrame, options: LineChartOptions): AxisTicks {
  const { plot, x0, x1, y0, y1 } = frame;
  const xTicks = niceTicks(
    x0,
    x1,
    Math.max(2, Math.min(10, Math.floor((plot.right - plot.left) / 70))),
    options.integerX,
  ).filter((t) => t >= x0 - 1e-9 && t <= x1 + 1e-9);
  const yTicks = niceTicks(y0, y1, Math.max(2, Math.floor((plot.bottom - plot.top) / 48))).filter(
    (t) => t >= y0 - 1e-9 && t <= y1 + 1e-9,
  );
  return { xTicks, yTicks, xFormat: tickFormat(xTicks), yFormat: options.yFormat ?? tickFormat(yTicks) };
}

/** Shaded ranges of y (emotion states) behind everything, labelled right of the plot where they are tall enough. */
function yBandsSvg(bands: YBand[], { plot, y0, y1, sy }: ChartFrame): string[] {
  const parts: string[] = [];
  for (const band of bands) {
    const top = sy(Math.min(y1, Math.max(band.from, band.to)));
    const bottom = sy(Math.max(y0, Math.min(band.from, band.to)));
    if (bottom - top <= 0) continue;
    parts.push(
      `<rect class="yband" x="${plot.left}" y="${top.toFixed(1)}" width="${plot.right - plot.left}" height="${(bottom - top).toFixed(1)}" fill="${escapeHtml(band.color)}"/>`,
    );
    if (band.label && bottom - top >= CHART_FONT_SIZE) {
      parts.push(
        `<text class="yband-label" x="${plot.right + 8}" y="${((top + bottom) / 2 + 4).toFixed(1)}" text-anchor="start">${escapeHtml(band.label)}</text>`,
      );
    }
  }
  return parts;
}

/** Grid lines and tick labels on y, tick marks and labels on x, the x axis and the axis titles. */
function axesSvg(frame: ChartFrame, ticks: AxisTicks, options: LineChartOptions): string[] {
  const { plot, height, sx, sy } = frame;
  const parts: string[] = [];
  for (const t of ticks.yTicks) {
    const y = sy(t).toFixed(1);
    parts.push(`<line class="grid" x1="${plot.left}" x2="${plot.right}" y1="${y}" y2="${y}"/>`);
    parts.push(
      `<text class="tick" x="${plot.left - 8}" y="${(sy(t) + 4).toFixed(1)}" text-anchor="end">${escapeHtml(ticks.yFormat(t))}</text>`,
    );
  }
  for (const t of ticks.xTicks) {
    const x = sx(t).toFixed(1);
    parts.push(`<line class="tick-mark" x1="${x}" x2="${x}" y1="${plot.bottom}" y2="${plot.bottom + 5}"/>`);
    parts.push(
      `<text class="tick" x="${x}" y="${plot.bottom + 18}" text-anchor="middle">${escapeHtml(ticks.xFormat(t))}</text>`,
    );
  }
  parts.push(`<line class="axis" x1="${plot.left}" x2="${plot.right}" y1="${plot.bottom}" y2="${plot.bottom}"/>`);
  if (options.xLabel)
    parts.push(
      `<text class="axis-label" x="${((plot.left + plot.right) / 2).toFixed(1)}" y="${height - 8}" text-anchor="middle">${escapeHtml(options.xLabel)}</text>`,
    );
  if (options.yLabel)
    parts.push(
      `<text class="axis-label" transform="translate(14 ${((plot.top + plot.bottom) / 2).toFixed(1)}) rotate(-90)" text-anchor="middle">${escapeHtml(options.yLabel)}</text>`,
    );
  return parts;
}

/** Labelled horizontal reference lines; those outside the y domain are left out. */
function refLinesSvg(refLines: NonNullable<LineChartOptions['refLines']>, { plot, y0, y1, sy }: ChartFrame): string[] {
  const parts: string[] = [];
  for (const ref of refLines) {
    if (ref.y < y0 || ref.y > y1) continue;
    const y = sy(ref.y).toFixed(1);
    parts.push(
      `<line class="ref" x1="${plot.left}" x2="${plot.right}" y1="${y}" y2="${y}" stroke="${escapeHtml(ref.color)}"/>`,
    );
    parts.push(
      `<text class="ref-label" x="${plot.left + 6}" y="${(sy(ref.y) - 5).toFixed(1)}" fill="${escapeHtml(ref.color)}">${escapeHtml(ref.label)}</text>`,
    );
  }
  return parts;
}

/** The series' shaded band: along its upper edge, back along its lower edge. */
function seriesBandSvg(band: NonNullable<LineSeries['band']>, color: string, { sx, sy }: ChartFrame): string {
  const upper = band.map((b, i) => `${i === 0 ? 'M' : 'L'}${sx(b.x).toFixed(1)},${sy(b.hi).toFixed(1)}`).join('');
  const lower = [...band]
    .reverse()
    .map((b) => `L${sx(b.x).toFixed(1)},${sy(b.lo).toFixed(1)}`)
    .join('');
  return `<path class="band" d="${upper}${lower}Z" fill="${color}" fill-opacity="0.14" stroke="none"/>`;
}

/** The line itself, with the wide invisible hit area and the white halo under it when asked for. */
function seriesLineSvg(s: LineSeries, d: string, color: string): string[] {
  const parts: string[] = [];
  if (s.hitArea) parts.push(`<path class="hit" d="${d}" fill="none" stroke="transparent" stroke-width="12"/>`);
  if (s.halo)
    parts.push(
      `<path class="halo" d="${d}" fill="none" stroke="#fff" stroke-opacity="0.9" stroke-width="${(s.width ?? 2) + 3}" stroke-linejoin="round" stroke-linecap="round"/>`,
    );
  parts.push(
    `<path class="line" d="${d}" fill="none" stroke="${color}" stroke-width="${s.width ?? 2}" stroke-linejoin="round" stroke-linecap="round"${s.dashed ? ' stroke-dasharray="6 4"' : ''}${s.opacity !== undefined ? ` stroke-opacity="${s.opacity}"` : ''}/>`,
  );
  return parts;
}

/** A circle with its value as tooltip at each point, or (markers off) only at points no line reaches. */
function seriesMarkersSvg(s: LineSeries, color: string, { sx, sy }: ChartFrame): string[] {
  const parts: string[] = [];
  const valid = s.points.filter((p) => isValue(p.y));
  const markers = s.markers ?? valid.length <= 40;
  // A lone point between gaps has no line: always mark it.
  for (const [i, p] of s.points.entries()) {
    if (!isValue(p.y)) continue;
    const lonely = !isValue(s.points[i - 1]?.y ?? null) && !isValue(s.points[i + 1]?.y ?? null);
    if (!markers && !lonely) continue;
    parts.push(
      `<circle class="marker" cx="${sx(p.x).toFixed(1)}" cy="${sy(p.y).toFixed(1)}" r="${markers ? 3 : 2.5}" fill="${color}"${s.opacity !== undefined ? ` fill-opacity="${s.opacity}"` : ''}><title>${escapeHtml(`${s.name}: ${formatChartNumber(p.x)}, ${formatChartNumber(p.y)}`)}</title></circle>`,
    );
  }
  return parts;
}

/** One series as an SVG group: band, title, line and markers. */
function seriesSvg(s: LineSeries, frame: ChartFrame): string {
  const color = escapeHtml(s.color);
  const group: string[] = [];
  if (s.band && s.band.length > 0) group.push(seriesBandSvg(s.band, color, frame));
  const d = linePath(s.points, frame.sx, frame.sy);
  if (s.title) group.push(`<title>${escapeHtml(s.title)}</title>`);
  if (d) group.push(...seriesLineSvg(s, d, color));
  group.push(...seriesMarkersSvg(s, color, frame));
  return `<g class="series${s.className ? ` ${escapeHtml(s.className)}` : ''}" data-name="${escapeHtml(s.name)}"${attrsOf(s.attrs)}>${group.join('')}</g>`;
}

/** The data-hover attribute the page script draws its crosshair from: every hovered series' value at each x. */
function hoverAttribute(options: LineChartOptions, { width, height, plot, x0, x1, y0, y1 }: ChartFrame): string {
  const hovered = options.series.filter((s) => !s.noHover);
  const allX = [...new Set(hovered.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b);
  const data = {
    vb: [width, height],
    plot: [plot.left, plot.top, plot.right, plot.bottom],
    x: [x0, x1],
    y: [y0, y1],
    xs: allX,
    xl: options.xLabel ?? 'x',
    d: options.hoverDigits ?? 3,
    series: hovered.map((s) => {
      const byX = new Map(s.points.map((p) => [p.x, p.y]));
      return {
        n: s.name,
        c: s.color,
        ys: allX.map((x) => {
          const y = byX.get(x);
          return isValue(y ?? null) ? y : null;
        }),
      };
    }),
  };
  return ` data-hover="${escapeHtml(JSON.stringify(data))}"`;
}

export function lineChart(options: LineChartOptions): SafeHtml {
  const frame = chartFrame(options);
  const { width, height, plot } = frame;
  const clipId = `clip-${Math.abs(hashString(options.ariaLabel + width + height)).toString(36)}`;
  const parts = [
    `<defs><clipPath id="${clipId}"><rect x="${plot.left}" y="${plot.top - 3}" width="${plot.right - plot.left}" height="${plot.bottom - plot.top + 6}"/></clipPath></defs>`,
    ...yBandsSvg(options.bands ?? [], frame),
    ...axesSvg(frame, axisTicks(frame, options), options),
    ...refLinesSvg(options.refLines ?? [], frame),
    `<g class="series-layer" clip-path="url(#${clipId})">`,
    ...options.series.map((s) => seriesSvg(s, frame)),
    '</g>',
  ];
  const hover = options.hover ? hoverAttribute(options, frame) : '';
  return raw(
    `<svg class="chart${options.className ? ` ${escapeHtml(options.className)}` : ''}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(options.ariaLabel)}" font-size="${CHART_FONT_SIZE}"${hover}>${parts.join('')}</svg>`,
  );
}

function padX([lo, hi]: [number, number]): [number, number] {
  return lo === hi ? [lo - 1, hi + 1] : [lo, hi];
}

function hashString(value: string): number {
  let h = 0;
  for (let i = 0; i < value.length; i++) h = (Math.imul(31, h) + value.charCodeAt(i)) | 0;
  return h;
}
