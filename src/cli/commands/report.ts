import type { ArtifactStore } from '../../artifacts/store.js';
import { defaultReportDir, storeReportFiles } from '../../report/reportOutput.js';
import { writeComparisonReport, writeReport } from '../../report/write.js';
import { commandContext } from '../context.js';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { terminalSafe } from '../../core/terminalText.js';

export const REPORT_FLAGS = {
  out: {
    type: 'string',
    short: 'o',
    value: 'DIR',
    help: 'where to write index.html and the PNGs (default: <artifacts>/reports/<target>/,\nfor several: <artifacts>/reports/compare-<A>-vs-<B>.../; with an object store:\n<home>/reports/..., and the files are copied into the store too)',
  },
  'html-only': { type: 'boolean', help: 'skip the PNG charts (they need Chromium: apt-get install chromium)' },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const REPORT_HELP = `attune report RUN-OR-EVAL [--out DIR] [--html-only] [--config FILE] [--set k=v]
attune report RUN-OR-EVAL RUN-OR-EVAL... [--out DIR] [--html-only] [--config FILE] [--set k=v]

Writes a self-contained HTML report (no network needed to view it) and PNG files of its main charts.
RUN-OR-EVAL is an evaluation id (evaluations/<id>/evaluation.json) or a training run name
(runs/<run>/metrics.jsonl and the evaluations of that run); the evaluation is tried first.
Several of them give one page that overlays them: reward curves of the runs, Sentient scores (a run's
over its steps, an evaluation's as a level), and the score per goal type (a run's latest evaluation).

${flagHelp(REPORT_FLAGS)}`;

/** Prints where the page was written (and stored, with an object store). */
async function printWritten(store: ArtifactStore, target: string, html: string, files: string[]): Promise<void> {
  const stored = await storeReportFiles(store, target, files);
  process.stdout.write(`report: ${html}\n`);
  if (stored) process.stdout.write(`stored: ${stored}\n`);
}

async function compare(
  store: ArtifactStore,
  targets: string[],
  outDir: string,
  png: boolean,
  storedAs: string,
): Promise<number> {
  if (new Set(targets).size !== targets.length) throw new UsageError(`a target is named twice: ${targets.join(' ')}`);
  let result;
  try {
    result = await writeComparisonReport({ store, targets, outDir, png });
  } catch (error) {
    if ((error as Error).name === 'ReportTargetNotFoundError') {
      process.stderr.write(`attune report: ${(error as Error).message}\n`);
      return 1;
    }
    throw error;
  }
  for (const warning of result.warnings) process.stderr.write(`attune report: warning: ${warning}\n`);
  process.stdout.write(`comparison report of ${targets.join(', ')}\n`);
  for (const file of result.pngs) process.stdout.write(`  chart ${file}\n`);
  await printWritten(store, storedAs, result.html, [result.html, ...result.pngs]);
  return 0;
}

export async function reportCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, REPORT_FLAGS);
  if (values.help) {
    process.stdout.write(`${REPORT_HELP}\n`);
    return 0;
  }
  const target = positionals[0];
  if (!target) throw new UsageError(`a run name or an evaluation id is required\n\n${REPORT_HELP}`);
  const { config, store } = commandContext(values, 'report');
  if (positionals.length > 1) {
    const name = `compare-${positionals.join('-vs-')}`;
    const outDir = values.out ?? defaultReportDir(store, config.home, name);
    return compare(store, positionals, outDir, !values['html-only'], name);
  }
  const outDir = values.out ?? defaultReportDir(store, config.home, target);
  let result;
  try {
    result = await writeReport({ store, target, outDir, png: !values['html-only'] });
  } catch (error) {
    if ((error as Error).name === 'ReportTargetNotFoundError') {
      process.stderr.write(`attune report: ${terminalSafe((error as Error).message)}\n`);
      return 1;
    }
    throw error;
  }
  for (const warning of result.warnings) process.stderr.write(`attune report: warning: ${terminalSafe(warning)}\n`);
  process.stdout.write(`${result.kind} report of ${terminalSafe(target)}\n`);
  for (const png of result.pngs) process.stdout.write(`  chart ${png}\n`);
  await printWritten(store, target, result.html, result.files);
  return 0;
}
