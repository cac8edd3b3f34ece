import { access, constants, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ArtifactStore } from '../artifacts/store.js';
import { renderEvaluationPage } from './evaluationPage.js';
import { evaluationKey, runMetricsKey } from '../artifacts/keys.js';
import { loadEvaluation, loadRun } from './load.js';
import { renderRunPage } from './runPage.js';
import { renderComparisonPage, type ComparedTarget } from './comparisonPage.js';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/** Flags for headless Chromium on a machine without network, GPU or sandbox support. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const CHROMIUM_HINT =
  'PNG charts need Chromium: install it with `apt-get install chromium` (or scripts/install-chromium.sh), or set CHROMIUM_PATH';

export class ReportTargetNotFoundError extends Error {
  constructor(
    readonly target: string,
    readonly triedKeys: string[],
    where: string,
  ) {
    super(`no evaluation or run named "${target}": tried ${triedKeys.join(' and ')} in ${where}`);
    this.name = 'ReportTargetNotFoundError';
  }
}

export interface WriteReportOptions {
  store: ArtifactStore;
  /** An evaluation id or a run name (evaluation tried first). */
  target: string;
  outDir: string;
  /** Render PNG files of the main charts (default true). */
  png?: boolean;
  /** Chromium executable; default $CHROMIUM_PATH or /usr/bin/chromium. */
  chromiumPath?: string;
  /** Fixed generation time (tests, reproducible output). */
  generatedAt?: string;
}

export interface ReportResult {
  kind: 'evaluation' | 'run';
  target: string;
  outDir: string;
  /** index.html */
  html: string;
  /** PNG files of the main charts, one per chart. */
  pngs: string[];
  /** html then pngs. */
  files: string[];
  /** Problems that did not stop the report (missing transcripts, no Chromium, ...). */
  warnings: string[];
}

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function resolveChromium(explicit?: string): string {
  return explicit ?? process.env.CHROMIUM_PATH ?? DEFAULT_CHROMIUM;
}

/**
 * Opens the written page in headless Chromium and screenshots every element marked `data-png="NAME"`
 * into NAME.png. The page is loaded from its file; any other request is refused.
 */
export async function renderPngs(htmlFile: string, outDir: string, chromiumPath: string): Promise<string[]> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      deviceScaleFactor: 2,
      reducedMotion: 'reduce',
    });
    await context.route(/^(?!file:)/, (route) => route.abort());
    const page = await context.newPage();
    await page.goto(pathToFileURL(htmlFile).href, { waitUntil: 'load' });
    const names = await page
      .locator('[data-png]')
      .evaluateAll((els) => els.map((el) => el.getAttribute('data-png') ?? ''));
    const files: string[] = [];
    for (const [i, name] of names.entries()) {
      if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) continue;
      const file = join(outDir, `${name}.png`);
      await page.locator('[data-png]').nth(i).screenshot({ path: file, animations: 'disabled' });
      files.push(file);
    }
    await context.close();
    return files;
  } finally {
    await browser.close();
  }
}

/** Writes `index.html` (and PNGs of the main charts) for an evaluation id or a run name. */
export async function writeReport(options: WriteReportOptions): Promise<ReportResult> {
  const { store, target } = options;
  if (target.trim() === '' || target === '.' || target === '..')
    throw new Error(`"${target}" is not an evaluation id or a run name`);
  const outDir = resolve(options.outDir);
  const generatedAt = options.generatedAt ?? new Date().toISOString();
  const warnings: string[] = [];
  let page: string;
  let kind: ReportResult['kind'];

  const evaluation = await loadEvaluation(store, target);
  if (evaluation) {
    kind = 'evaluation';
    warnings.push(...evaluation.notes);
    page = renderEvaluationPage({
      report: evaluation.report,
      transcripts: evaluation.transcripts,
      notes: evaluation.notes,
      generatedAt,
    });
  } else {
    const run = await loadRun(store, target);
    if (!run)
      throw new ReportTargetNotFoundError(target, [evaluationKey(target), runMetricsKey(target)], store.location);
    kind = 'run';
    warnings.push(...run.notes);
    page = renderRunPage({
      run: run.run,
      steps: run.steps,
      evaluations: run.evaluations,
      notes: run.notes,
      generatedAt,
    });
  }

  const { html, pngs } = await writePage(page, outDir, options, warnings);
  return { kind, target, outDir, html, pngs, files: [html, ...pngs], warnings };
}

/** index.html, then the PNGs of its charts; a missing or failing Chromium is a warning, not an error. */
async function writePage(
  page: string,
  outDir: string,
  options: Pick<WriteReportOptions, 'png' | 'chromiumPath'>,
  warnings: string[],
): Promise<{ html: string; pngs: string[] }> {
  await mkdir(outDir, { recursive: true });
  const html = join(outDir, 'index.html');
  await writeFile(html, page, 'utf8');
  let pngs: string[] = [];
  if (options.png !== false) {
    const chromiumPath = resolveChromium(options.chromiumPath);
    if (!(await executable(chromiumPath))) {
      warnings.push(`no PNG charts: ${chromiumPath} not found. ${CHROMIUM_HINT}`);
    } else {
      try {
        pngs = await renderPngs(html, outDir, chromiumPath);
      } catch (error) {
        warnings.push(
          `no PNG charts: Chromium (${chromiumPath}) failed: ${(error as Error).message.split('\n')[0]}. ${CHROMIUM_HINT}`,
        );
      }
    }
  }
  return { html, pngs };
}

/** One target of a comparison: the evaluation of that id, else the run of that name. */
async function loadTarget(store: ArtifactStore, target: string, notes: string[]): Promise<ComparedTarget> {
  const evaluation = await loadEvaluation(store, target);
  if (evaluation) {
    notes.push(...evaluation.notes.map((n) => `${target}: ${n}`));
    return { kind: 'evaluation', name: target, report: evaluation.report };
  }
  const run = await loadRun(store, target);
  if (!run) throw new ReportTargetNotFoundError(target, [evaluationKey(target), runMetricsKey(target)], store.location);
  notes.push(...run.notes.map((n) => `${target}: ${n}`));
  return { kind: 'run', name: target, steps: run.steps, evaluations: run.evaluations };
}

/** Writes one page overlaying several runs and evaluations (reward curves, Sentient scores, per goal type). */
export async function writeComparisonReport(
  options: Omit<WriteReportOptions, 'target'> & { targets: string[] },
): Promise<Omit<ReportResult, 'kind' | 'target'> & { kind: 'comparison'; targets: string[] }> {
  const { store, targets } = options;
  const repeated = targets.find((t, i) => targets.indexOf(t) !== i);
  if (repeated !== undefined) throw new Error(`"${repeated}" is named twice`);
  const notes: string[] = [];
  const loaded: ComparedTarget[] = [];
  for (const target of targets) loaded.push(await loadTarget(store, target, notes));
  const outDir = resolve(options.outDir);
  const warnings = [...notes];
  const page = renderComparisonPage({
    targets: loaded,
    notes,
    generatedAt: options.generatedAt ?? new Date().toISOString(),
  });
  const { html, pngs } = await writePage(page, outDir, options, warnings);
  return { kind: 'comparison', targets, outDir, html, pngs, files: [html, ...pngs], warnings };
}
