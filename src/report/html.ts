/**
 * HTML building with escaping by default: every interpolated value is escaped unless it is already
 * `SafeHtml` (markup this module produced). Transcript text is model output and is never trusted.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Marks trusted markup (built by this module only, never from data). */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false || value === true) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  return escapeHtml(String(value));
}

/** Tagged template: `html\`<p>${text}</p>\`` escapes `text`; nested `html` results pass through. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(out);
}

export function join(parts: readonly HtmlValue[], separator: HtmlValue = ''): SafeHtml {
  return new SafeHtml(parts.map(render).join(render(separator)));
}

/** Text with line breaks kept (CSS `white-space: pre-wrap` does the rest). */
export function text(value: string | null | undefined): SafeHtml {
  return new SafeHtml(escapeHtml(value ?? ''));
}

/** A value usable in an HTML id / URL fragment, unique within `taken`. */
export function uniqueSlug(value: string, taken: Set<string>, prefix = 'd-'): string {
  const base = `${prefix}${
    value
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'x'
  }`;
  let slug = base;
  for (let n = 2; taken.has(slug); n++) slug = `${base}-${n}`;
  taken.add(slug);
  return slug;
}

export function formatNumber(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (Number.isInteger(value) && Math.abs(value) < 1e6) return String(value);
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 10 ** -digits || abs >= 1e6)) return value.toExponential(1);
  return value
    .toFixed(digits)
    .replace(/(\.\d*?)0+$/, '$1')
    .replace(/\.$/, '');
}

export function formatPercent(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  return `${(value * 100).toFixed(digits)}%`;
}

export function formatSigned(value: number): string {
  if (value > 0) return `+${value}`;
  if (value < 0) return `\u2212${Math.abs(value)}`;
  return '\u00b10';
}

export function formatInt(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** An ISO time as "2026-01-06 03:00 UTC" (other strings are returned as they are). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '–';
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?Z$/.exec(iso);
  return m ? `${m[1]} ${m[2]} UTC` : iso;
}
