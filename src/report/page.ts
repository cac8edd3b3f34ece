/**
 * The page shell shared by the evaluation and run reports: inline CSS, one inline script allowed by
 * a Content-Security-Policy hash (nothing else can run, nothing can be fetched), and the markup.
 * The style sheets and the script live in assets/ (checked by Prettier, ESLint and tsc like other
 * sources) and are read once, when this module loads.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { html, raw, type SafeHtml } from './html.js';
import { STATE_COLORS } from './theme.js';

export const ASSETS_DIR = join(__dirname, 'assets');

/** An asset's text, which must not be able to end the element it is inlined into. */
export function readInlineAsset(name: string, element: 'style' | 'script'): string {
  const text = readFileSync(join(ASSETS_DIR, name), 'utf8');
  const lower = text.toLowerCase();
  if (lower.includes(`</${element}`) || lower.includes('<!--')) {
    throw new Error(`assets/${name} contains "</${element}" or "<!--" and cannot be inlined into <${element}>`);
  }
  return text;
}

/** The emotion-state colours as custom properties, so that theme.ts stays their one source. */
export const STATE_PALETTE_CSS = `:root{${Object.entries(STATE_COLORS)
  .map(([state, c]) => `--state-${state}:${c.fg};--state-${state}-tint:${c.tint}`)
  .join(';')}}\n`;

/** The style sheets, in cascade order. */
export const CSS_FILES = ['base.css', 'charts.css', 'summary.css', 'tables.css', 'dialogue.css'] as const;

export const CSS = STATE_PALETTE_CSS + CSS_FILES.map((name) => readInlineAsset(name, 'style')).join('');

/** Progressive enhancement only: hover read-outs, highlighting, sorting, keyboard. The page works without it. */
export const SCRIPT = readInlineAsset('report.js', 'script');

/** The CSP source that allows the inline script: the hash of exactly the text between its tags. */
export const SCRIPT_HASH = `sha256-${createHash('sha256').update(SCRIPT, 'utf8').digest('base64')}`;

export interface PageOptions {
  title: string;
  body: SafeHtml;
}

/** A complete, self-contained HTML document. */
export function renderPage(options: PageOptions): string {
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src '${SCRIPT_HASH}'; img-src data:; base-uri 'none'; form-action 'none'`;
  // The script goes in with nothing around it: any added character would break its hash.
  return `<!DOCTYPE html>\n${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="generator" content="attune report">
<title>${options.title}</title>
<style>${raw(CSS)}</style>
</head>
<body>
${options.body}
<script>${raw(SCRIPT)}</script>
</body>
</html>
`.value
  }`;
}
