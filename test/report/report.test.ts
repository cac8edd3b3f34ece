import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { main } from '../../src/cli/main.js';
import { REPO_ROOT } from '../../src/paths.js';
import { CHROMIUM_ARGS, DEFAULT_CHROMIUM, writeReport, type ReportResult } from '../../src/report/index.js';
import { DIALOGUES, EVAL_ID, INJECTION, RUN, storeEvaluation, storeRun } from './fixtures.js';

const run = promisify(execFile);
const OUTPUT = resolve(REPO_ROOT, 'test-output/report');

function assertPng(file: string): { width: number; height: number } {
  assert.ok(existsSync(file), `${file} exists`);
  const bytes = readFileSync(file);
  assert.deepEqual(
    [...bytes.subarray(0, 8)],
    [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
    `${file} has the PNG signature`,
  );
  assert.equal(bytes.subarray(12, 16).toString('latin1'), 'IHDR');
  assert.ok(bytes.length > 4000, `${file} is not trivially small (${bytes.length} bytes)`);
  const size = { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  assert.ok(size.width >= 300 && size.height >= 100, `${file} is ${size.width}x${size.height}`);
  return size;
}

/** The part of SVGPathElement the checks use (the project compiles without the DOM library). */
interface SvgPath {
  getAttribute(name: string): string | null;
  getBBox(): { width: number; height: number };
  getTotalLength(): number;
}

interface Opened {
  page: Page;
  context: BrowserContext;
  /** Console errors and warnings, page errors, failed and non-file requests. */
  problems: string[];
}

describe('reports (HTML pages in headless Chromium)', () => {
  let tmp: string;
  let store: FileArtifactStore;
  let browser: Browser;
  let evaluation: ReportResult;
  let runReport: ReportResult;
  const contexts: BrowserContext[] = [];

  async function open(file: string, options: BrowserContextOptions = {}): Promise<Opened> {
    const context = await browser.newContext({
      viewport: { width: 1366, height: 860 },
      reducedMotion: 'reduce',
      ...options,
    });
    contexts.push(context);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
    page.on('request', (r) => {
      if (!r.url().startsWith('file:')) problems.push(`network request: ${r.url()}`);
    });
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    return { page, context, problems };
  }

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'attune-report-'));
    store = new FileArtifactStore(join(tmp, 'artifacts'));
    await storeEvaluation(store);
    await storeRun(store);
    mkdirSync(OUTPUT, { recursive: true });
    browser = await chromium.launch({ executablePath: DEFAULT_CHROMIUM, args: CHROMIUM_ARGS });
    [evaluation, runReport] = await Promise.all([
      writeReport({ store, target: EVAL_ID, outDir: join(tmp, 'out-eval') }),
      writeReport({ store, target: RUN, outDir: join(tmp, 'out-run') }),
    ]);
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  describe('evaluation page', () => {
    it('writes index.html and valid PNGs of the main charts', () => {
      assert.equal(evaluation.kind, 'evaluation');
      assert.deepEqual(evaluation.warnings, []);
      assert.equal(evaluation.html, join(tmp, 'out-eval', 'index.html'));
      const names = evaluation.pngs.map((p) => p.slice(p.lastIndexOf('/') + 1)).sort();
      assert.deepEqual(names, [
        'emotion-trajectories.png',
        'score-by-goal-type.png',
        'score-by-personality.png',
        'sentient-score.png',
      ]);
      for (const png of evaluation.pngs) assertPng(png);
      assert.ok(
        assertPng(join(tmp, 'out-eval', 'emotion-trajectories.png')).width >= 1800,
        'the trajectory chart is rendered at 2x',
      );
      assert.deepEqual(evaluation.files, [evaluation.html, ...evaluation.pngs]);
    });

    it('loads without errors or requests and draws the score, bars, trajectories and table', async () => {
      const { page, problems } = await open(evaluation.html);
      assert.equal(await page.locator('#score').innerText(), '54.75 / 100'); // (100 + 6 + 68 + 45) / 4; the failed dialogue excluded
      assert.match(await page.locator('.score-card').innerText(), /1\s+failed, excluded/);

      // Breakdown bars: one per goal type and per personality, each as long as its score.
      const bars = await page
        .locator('svg.bars rect.bar')
        .evaluateAll((els) => els.map((el) => Number(el.getAttribute('width'))));
      assert.equal(bars.length, 6);
      const track = Number(await page.locator('svg.bars rect.bar-track').first().getAttribute('width'));
      // deep-empathy: (100 + 45) / 2 = 72.5 of 100
      assert.ok(Math.abs((bars[0] ?? 0) / track - 0.725) < 0.01, `deep-empathy bar ${bars[0]} of ${track}`);
      assert.deepEqual(await page.locator('svg.bars').first().locator('.bar-label').allTextContents(), [
        'deep-empathy',
        'not-my-fault',
        'practical-advice',
      ]);

      // One trajectory line per finished dialogue, with one vertex per emotion value.
      const lines = await page.locator('svg.trajectories g.traj').evaluateAll((gs) =>
        gs.map((g) => {
          const path = g.querySelector('path.line') as unknown as SvgPath;
          return {
            target: g.getAttribute('data-target'),
            vertices: (path.getAttribute('d') ?? '').split(/[ML]/).filter(Boolean).length,
            width: path.getBBox().width,
            length: path.getTotalLength(),
          };
        }),
      );
      assert.deepEqual(lines.map((l) => l.target).sort(), DIALOGUES.map((d) => `d-${d.id}`).sort());
      for (const spec of DIALOGUES) {
        const line = lines.find((l) => l.target === `d-${spec.id}`);
        assert.equal(line?.vertices, spec.emotions.length, `${spec.id} vertices`);
        assert.ok((line?.length ?? 0) > 100 && (line?.width ?? 0) > 100, `${spec.id} is drawn`);
      }
      assert.equal(await page.locator('svg.trajectories g.mean path.line').count(), 1);

      assert.equal(await page.locator('table.dialogues tbody tr').count(), 5);
      assert.match(await page.locator('tr[data-status=failed]').innerText(), /lost-connection[\s\S]*failed/);
      await page.screenshot({ path: join(OUTPUT, 'evaluation.png'), fullPage: true });
      assert.deepEqual(problems, []);
    });

    it('opens a dialogue from the table: turns, inner thoughts, emotion changes, collapsible thinking', async () => {
      const { page, problems } = await open(evaluation.html);
      const viewer = page.locator('#d-nurse-night-shift');
      assert.equal(await viewer.isVisible(), false, 'closed until opened');
      await page.locator('table.dialogues a[href="#d-nurse-night-shift"]').click();
      await viewer.waitFor({ state: 'visible' });
      assert.equal(await viewer.locator('li.turn[data-turn]').count(), 7);
      const text = await viewer.innerText();
      assert.match(text, /Hi\. I'm Maya and honestly today was a lot\./);
      assert.match(text, /Reply 1 to Maya: that sounds hard\./);
      assert.match(text, /Maya thought number 1/);
      assert.match(text, /Maya thought number 7/);
      assert.match(text, /Thank you\. Goodbye for now\./);
      const deltas = await viewer.locator('.delta').evaluateAll((els) => els.map((el) => el.firstChild?.textContent));
      assert.deepEqual(deltas, ['+8', '+10', '+10', '+10', '+10', '+10', '+2']);
      assert.match(await viewer.locator('li.turn[data-turn="3"] .emo-after').innerText(), /emotion 58 →\s*68\s*B/);
      assert.match(await viewer.locator('li.turn[data-turn="5"] .emo-after').innerText(), /emotion 78 →\s*88\s*A/);
      // The trajectory of the open dialogue is selected in the chart.
      assert.equal(
        await page.locator('svg.trajectories g.traj.sel').getAttribute('data-target'),
        'd-nurse-night-shift',
      );

      const thinking = viewer.locator('details.thinking').first();
      assert.equal(await thinking.locator('.pre').isVisible(), false, 'thinking is collapsed');
      await thinking.locator('summary').click();
      await thinking.locator('.pre').waitFor({ state: 'visible' });
      assert.equal(await thinking.locator('.pre').innerText(), 'She is exhausted; acknowledge first.');
      await page.screenshot({ path: join(OUTPUT, 'evaluation-dialogue.png') });

      await viewer.locator('a.next').click();
      await page.locator('#d-blamed-at-work').waitFor({ state: 'visible' });
      assert.equal(await viewer.isVisible(), false);
      assert.match(await page.locator('#d-blamed-at-work').innerText(), /−8[\s\S]*emotion 40 →\s*32/);
      await page.keyboard.press('Escape');
      await page.locator('#d-blamed-at-work').waitFor({ state: 'hidden' });
      assert.equal(new URL(page.url()).hash, '#dialogues');
      assert.deepEqual(problems, []);
    });

    it('highlights a dialogue on hover and opens it from its line', async () => {
      const { page, problems } = await open(evaluation.html);
      await page.locator('tr[data-target="d-exam-stress"]').hover();
      await page
        .locator('svg.trajectories.has-hl g.traj.hl[data-target="d-exam-stress"]')
        .waitFor({ state: 'attached' });
      assert.match(await page.locator('#traj-info').innerText(), /^exam-stress · practical-advice · passive · 40 → 44/);
      await page.locator('svg.trajectories g.traj[data-target="d-blamed-at-work"]').dispatchEvent('click');
      await page.locator('#d-blamed-at-work').waitFor({ state: 'visible' });
      assert.deepEqual(problems, []);
    });

    it('shows HTML from transcripts as text and never runs it', async () => {
      const { page, problems } = await open(evaluation.html);
      await page.locator('table.dialogues a[href="#d-script-kiddie"]').click();
      const viewer = page.locator('#d-script-kiddie');
      await viewer.waitFor({ state: 'visible' });
      assert.equal(
        await viewer.locator('.msg.assistant .bubble').first().innerText(),
        `Here is some markup: ${INJECTION}`,
      );
      assert.equal(await viewer.locator('.thought').first().innerText(), `He wrote ${INJECTION} at me`);
      assert.equal(
        await viewer.locator('.msg.assistant .bubble').nth(1).innerText(),
        'Plain reply & <b>bold</b> attempt',
      );
      assert.equal(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned), undefined);
      assert.equal(await page.locator('script').count(), 1, 'only the report script');
      assert.equal(await page.locator('img, b:text("bold")').count(), 0);
      await page.keyboard.press('Escape');
      await viewer.waitFor({ state: 'hidden' });
      await page.locator('table.dialogues a[href="#d-lost-connection"]').click();
      await page.locator('#d-lost-connection').waitFor({ state: 'visible' });
      assert.equal(
        await page.locator('#d-lost-connection .error-box').innerText(),
        'simulator endpoint returned 503 <html>Service Unavailable</html>',
      );
      const source = readFileSync(evaluation.html, 'utf8');
      assert.ok(!source.includes('<script>window.__pwned'), 'no raw transcript markup in the file');
      assert.ok(source.includes('&lt;script&gt;window.__pwned = 1&lt;/script&gt;'));
      assert.deepEqual(problems, []);
    });

    it('works without JavaScript: charts are static SVG and the viewer opens by its link', async () => {
      const { page, problems } = await open(evaluation.html, { javaScriptEnabled: false });
      assert.equal(await page.locator('svg.trajectories g.traj path.line').count(), 4);
      assert.equal(await page.locator('svg.bars rect.bar').count(), 6);
      await page.locator('table.dialogues a[href="#d-exam-stress"]').click();
      await page.locator('#d-exam-stress').waitFor({ state: 'visible' });
      assert.match(await page.locator('#d-exam-stress').innerText(), /Lena thought number 10/);
      await page.locator('#d-exam-stress a.close').click();
      await page.locator('#d-exam-stress').waitFor({ state: 'hidden' });
      assert.deepEqual(problems, []);
    });
  });

  describe('run page', () => {
    it('writes index.html and valid PNGs of the run charts, noting the broken metrics line', () => {
      assert.equal(runReport.kind, 'run');
      assert.deepEqual(runReport.warnings, [`runs/${RUN}/metrics.jsonl line 4: not valid JSON (skipped)`]);
      const names = runReport.pngs.map((p) => p.slice(p.lastIndexOf('/') + 1)).sort();
      assert.deepEqual(names, [
        'entropy.png',
        'grad-norm.png',
        'kl.png',
        'loss.png',
        'reward.png',
        'sentient-score.png',
        'success-failure.png',
      ]);
      for (const png of runReport.pngs) assertPng(png);
    });

    it('draws the reward and Sentient-score curves, rates, KL/loss/entropy and the step table', async () => {
      const { page, problems } = await open(runReport.html);
      const reward = page.locator('[data-png=reward] svg.chart');
      const mean = reward.locator('g.series[data-name="mean reward"]');
      assert.equal(
        await mean.locator('circle.marker').count(),
        6,
        'one point per step (step 3 recorded twice counts once)',
      );
      assert.ok((await mean.locator('path.band').count()) === 1, 'the ±std band');
      assert.ok((await mean.locator('path.line').evaluate((p) => (p as unknown as SvgPath).getTotalLength())) > 500);

      // The score curve: evaluations at steps 2 and 4 (step 4's metrics name the same evaluation).
      const score = page.locator(
        '[data-png=sentient-score] svg.chart g.series[data-name="Sentient score"] circle.marker',
      );
      assert.equal(await score.count(), 2);
      const titles = await score.locator('title').allTextContents();
      assert.deepEqual(titles, ['Sentient score: 2, 43.75', 'Sentient score: 4, 54.75']);

      for (const [png, names] of [
        ['success-failure', ['success', 'failure', 'malformed']],
        ['kl', ['KL']],
        ['loss', ['loss', 'policy', 'value']],
        ['entropy', ['entropy']],
      ] as const) {
        const series = page.locator(`[data-png=${png}] svg.chart g.series`);
        assert.deepEqual(await series.evaluateAll((gs) => gs.map((g) => g.getAttribute('data-name'))), [...names], png);
        for (const name of names) {
          const d = await page.locator(`[data-png=${png}] g.series[data-name="${name}"] path.line`).getAttribute('d');
          assert.equal((d ?? '').split(/[ML]/).filter(Boolean).length, 6, `${png}/${name} has six points`);
        }
      }
      assert.deepEqual(await page.locator('table.steps tbody tr td:first-child').allInnerTexts(), [
        '6',
        '5',
        '4',
        '3',
        '2',
        '1',
      ]);
      assert.equal(await page.locator('table.evals tbody tr').count(), 2);

      // Hover read-out on the reward chart.
      const box = await reward.boundingBox();
      assert.ok(box);
      await page.mouse.move(box.x + box.width * 0.98, box.y + box.height * 0.5);
      const tip = page.locator('[data-png=reward] .tooltip');
      await tip.waitFor({ state: 'visible' });
      assert.match(await tip.innerText(), /^step 6\n[\s\S]*mean reward: 0\.72/);
      await page.mouse.move(0, 0);
      await tip.waitFor({ state: 'hidden' });

      // Sorting the step table.
      await page.locator('table.steps th', { hasText: 'Step' }).click();
      assert.deepEqual(await page.locator('table.steps tbody tr td:first-child').allInnerTexts(), [
        '1',
        '2',
        '3',
        '4',
        '5',
        '6',
      ]);
      await page.screenshot({ path: join(OUTPUT, 'run.png'), fullPage: true });
      assert.deepEqual(problems, []);
    });
  });

  describe('writeReport', () => {
    it('names both keys it tried when the target is neither an evaluation nor a run', async () => {
      await assert.rejects(writeReport({ store, target: 'nope', outDir: join(tmp, 'nope') }), (error: Error) => {
        assert.equal(error.name, 'ReportTargetNotFoundError');
        assert.match(
          error.message,
          /no evaluation or run named "nope": tried evaluations\/nope\/evaluation\.json and runs\/nope\/metrics\.jsonl/,
        );
        return true;
      });
      assert.equal(existsSync(join(tmp, 'nope')), false);
    });

    it('writes the HTML anyway and says PNGs need chromium when it is missing', async () => {
      const result = await writeReport({
        store,
        target: EVAL_ID,
        outDir: join(tmp, 'no-chromium'),
        chromiumPath: join(tmp, 'no-such-chromium'),
      });
      assert.ok(existsSync(result.html));
      assert.deepEqual(result.pngs, []);
      assert.equal(result.warnings.length, 1);
      assert.match(result.warnings[0] ?? '', /PNG charts need Chromium: install it with `apt-get install chromium`/);
    });
  });

  describe('attune report', () => {
    /** Runs `attune report ARGS` in this process, capturing what it writes. */
    async function inProcess(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
      const out = { stdout: '', stderr: '' };
      const write = { stdout: process.stdout.write, stderr: process.stderr.write };
      process.stdout.write = ((chunk: string | Uint8Array) => {
        out.stdout += String(chunk);
        return true;
      }) as typeof process.stdout.write;
      process.stderr.write = ((chunk: string | Uint8Array) => {
        out.stderr += String(chunk);
        return true;
      }) as typeof process.stderr.write;
      try {
        const code = await main(['report', ...args]);
        return { code, ...out };
      } finally {
        process.stdout.write = write.stdout;
        process.stderr.write = write.stderr;
      }
    }

    it('bin/attune.js report writes the report into --out and prints its path', async () => {
      const out = join(tmp, 'cli-eval');
      const { stdout } = await run(
        process.execPath,
        [join(REPO_ROOT, 'bin/attune.js'), 'report', EVAL_ID, '--out', out, '--set', `home=${tmp}`],
        { cwd: tmp, env: { ...process.env, ATTUNE_LOG_LEVEL: 'error' } },
      );
      assert.ok(stdout.endsWith(`report: ${join(out, 'index.html')}\n`), stdout);
      assert.ok(existsSync(join(out, 'index.html')));
      assertPng(join(out, 'emotion-trajectories.png'));
      assertPng(join(out, 'score-by-goal-type.png'));
    });

    it('defaults to <artifacts>/reports/<target>/, fails clearly on an unknown target, and has --help', async () => {
      const byDefault = await inProcess([RUN, '--html-only', '--set', `home=${tmp}`]);
      const html = join(tmp, 'artifacts', 'reports', RUN, 'index.html');
      assert.equal(byDefault.code, 0);
      assert.ok(byDefault.stdout.endsWith(`report: ${html}\n`), byDefault.stdout);
      assert.ok(existsSync(html));
      assert.equal(existsSync(join(tmp, 'artifacts', 'reports', RUN, 'reward.png')), false, '--html-only');
      assert.match(byDefault.stderr, /warning: runs\/grpo-demo\/metrics\.jsonl line 4: not valid JSON/);

      const unknown = await inProcess(['nope', '--set', `home=${tmp}`]);
      assert.equal(unknown.code, 1);
      assert.match(
        unknown.stderr,
        /no evaluation or run named "nope": tried evaluations\/nope\/evaluation\.json and runs\/nope\/metrics\.jsonl/,
      );
      assert.equal((await inProcess([])).code, 2, 'the target is required');
      const help = await inProcess(['--help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /attune report RUN-OR-EVAL \[--out DIR\]/);
    });
  });
});
