import type { EvaluationRow, RunRow } from '../../core/runListing.js';
import type { RunDetail } from '../../client/runDetail.js';
import { stalenessText } from '../../core/offPolicyFigures.js';

const num = (n: number | null, digits: number) => (n === null || !Number.isFinite(n) ? '-' : n.toFixed(digits));
const percent = (n: number | null) => (n === null || !Number.isFinite(n) ? '-' : `${(n * 100).toFixed(1)}%`);
/** Minutes are enough to tell runs apart; the JSON keeps the full timestamps. */
const when = (iso: string) => iso.slice(0, 16).replace('T', ' ');

/** Left-aligned text, right-aligned numbers; columns separated by two spaces. */
export function textTable(header: string[], rows: string[][], numeric: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function renderRunRows(rows: RunRow[]): string {
  if (rows.length === 0) return 'no training runs';
  return textTable(
    ['name', 'phase', 'step', 'last reward', 'started', 'updated'],
    rows.map((r) => [
      r.name,
      r.phase ?? '-',
      r.step === null ? '-' : String(r.step),
      num(r.lastReward, 3),
      when(r.started),
      when(r.updated),
    ]),
    [false, false, true, true, false, false],
  );
}

export function renderEvaluationRows(rows: EvaluationRow[]): string {
  if (rows.length === 0) return 'no evaluations';
  return textTable(
    ['id', 'score', 'run', 'step', 'status', 'started', 'updated'],
    rows.map((r) => [
      r.id,
      num(r.score, 2),
      r.run ?? '-',
      r.step === null ? '-' : String(r.step),
      r.status.toLowerCase(),
      when(r.started),
      when(r.updated),
    ]),
    [false, true, false, true, false, false, false],
  );
}

export function renderRunDetail(d: RunDetail): string {
  const r = d.run;
  const head = [
    `run          ${r.name}`,
    `phase        ${r.phase ?? '-'} (${r.status.toLowerCase()})`,
    `step         ${r.step ?? '-'} applied; latest published version ${d.latestVersion ?? '-'}`,
    `last reward  ${num(r.lastReward, 3)}`,
    `started      ${r.started}`,
    `updated      ${r.updated}`,
  ];
  const steps =
    d.steps.length === 0
      ? ['no step metrics recorded']
      : [
          textTable(
            [
              'step',
              'sampled from',
              'reward',
              'success',
              'eval score',
              'staleness',
              'IS mean',
              'IS max',
              'truncated',
              'publish ms',
            ],
            d.steps.map((s) => [
              String(s.step),
              s.sampledFrom,
              num(s.rewardMean, 3),
              num(s.successRate, 2),
              num(s.evalScore, 2),
              stalenessText(s.stalenessHistogram) ?? '-',
              num(s.isWeightMean, 3),
              num(s.isWeightMax, 3),
              percent(s.isTruncatedShare),
              s.publishLatencyMs === null ? '-' : String(s.publishLatencyMs),
            ]),
            [true, false, true, true, true, false, true, true, true, true],
          ),
        ];
  const evals = d.evaluations.length === 0 ? [] : ['', renderEvaluationRows(d.evaluations)];
  return [...head, '', ...steps, ...evals].join('\n');
}
