import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { raw } from '../../src/report/html.js';
import { ASSETS_DIR, CSS_FILES, renderPage, STATE_PALETTE_CSS } from '../../src/report/page.js';
import { STATE_COLORS } from '../../src/report/theme.js';

const asset = (name: string): string => readFileSync(join(ASSETS_DIR, name), 'utf8');

/** The text between an element's tags; exactly one such element. */
function only(page: string, tag: string): string {
  const found = [...page.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => m[1] ?? '');
  assert.equal(found.length, 1, `one <${tag}>`);
  return found[0] ?? '';
}

describe('report page assets', () => {
  const page = renderPage({ title: 't', body: raw('<p>body</p>') });

  it('inlines the state palette and then the style sheets exactly as they are in assets/', () => {
    assert.equal(only(page, 'style'), STATE_PALETTE_CSS + CSS_FILES.map(asset).join(''));
  });

  it('inlines assets/report.js exactly, allowed by the hash of that text in the Content-Security-Policy', () => {
    const script = only(page, 'script');
    assert.equal(script, asset('report.js'));
    const hash = createHash('sha256').update(script, 'utf8').digest('base64');
    const csp = (/http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(page)?.[1] ?? '').replace(/&#39;/g, "'");
    assert.match(csp, /script-src 'sha256-[^']+';/);
    assert.ok(csp.includes(`script-src 'sha256-${hash}';`), `${csp} allows sha256-${hash}`);
  });

  it('uses every asset: no style sheet or script in assets/ is left out of the page', () => {
    const files = readdirSync(ASSETS_DIR).filter((f) => /\.(css|js)$/.test(f));
    assert.deepEqual(files.sort(), [...CSS_FILES, 'report.js'].sort());
  });

  it('defines every state colour the style sheets use, from theme.ts', () => {
    const used = new Set(
      [
        ...CSS_FILES.map(asset)
          .join('')
          .matchAll(/var\(--state-([A-Z])(-tint)?\)/g),
      ].map((m) => m[1]),
    );
    assert.ok(used.size > 0);
    for (const state of used) assert.ok(state && state in STATE_COLORS, `--state-${state} is a state of theme.ts`);
    for (const [state, c] of Object.entries(STATE_COLORS)) {
      assert.ok(STATE_PALETTE_CSS.includes(`--state-${state}:${c.fg};--state-${state}-tint:${c.tint}`));
    }
  });

  it('type-checks assets/report.js against the DOM library (the project tsconfig leaves it out)', function () {
    this.timeout(60_000);
    const configPath = resolve(ASSETS_DIR, 'tsconfig.json');
    const config = ts.getParsedCommandLineOfConfigFile(
      configPath,
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
      },
    );
    assert.ok(config);
    assert.deepEqual(config.fileNames, [join(ASSETS_DIR, 'report.js')]);
    const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
      return `${d.file?.fileName ?? ''}:${where ? where.line + 1 : ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    assert.deepEqual(problems, []);
  });
});
