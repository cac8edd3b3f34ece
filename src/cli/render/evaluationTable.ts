import { emotionState, type EmotionState } from '../../core/emotion.js';
import type { EvaluationReport, ScoreGroup } from '../../core/evaluationReport.js';
import { intervalSummary, intervalTable, manifestLines } from './evaluationIntervals.js';
import { dialoguePhrases } from '../../core/dialogueKeys.js';

export interface EvaluationTableOptions {
  /** ANSI colours; default: only when stdout is a TTY and NO_COLOR is unset. */
  color?: boolean;
}

type Align = 'left' | 'right';

interface Column {
  title: string;
  align: Align;
}

const ANSI: Record<EmotionState | 'bold' | 'dim', string> = {
  S: '\x1b[35m',
  A: '\x1b[32m',
  B: '\x1b[33m',
  C: '\x1b[38;5;208m',
  F: '\x1b[31m',
  bold: '\x1b[1m',
  dim: '\x1b[2m',
};
const RESET = '\x1b[0m';
const SPARK = '▁▂▃▄▅▆▇█';

function defaultColor(): boolean {
  return Boolean(process.stdout.isTTY) && process.env.NO_COLOR === undefined;
}

/** Scores and means with two decimals, so a column's decimal points line up. */
function num(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** Emotions are integers; anything else keeps two decimals. */
function emotion(value: number): string {
  return Number.isInteger(value) ? String(value) : num(value);
}

/** Emotion 0..100 over turns as block characters: ▃▄▅▇█ */
export function emotionSparkline(values: number[]): string {
  return values
    .map(
      (v) =>
        SPARK[
          Math.max(
            0,
            Math.min(SPARK.length - 1, Math.round((Math.max(0, Math.min(100, v)) / 100) * (SPARK.length - 1))),
          )
        ],
    )
    .join('');
}

function truncate(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= width ? flat : `${flat.slice(0, Math.max(0, width - 1))}…`;
}

/** Lays out rows as aligned columns; `paint` colours a cell after padding, so widths stay right. */
function layout(
  columns: Column[],
  rows: string[][],
  paint: (row: number, col: number, cell: string) => string,
  header: (text: string) => string,
): string[] {
  const widths = columns.map((c, i) => Math.max(c.title.length, ...rows.map((r) => [...(r[i] ?? '')].length)));
  const pad = (text: string, i: number) => {
    if (i === columns.length - 1 && columns[i]?.align === 'left') return text;
    const width = widths[i] ?? 0;
    const fill = ' '.repeat(Math.max(0, width - [...text].length));
    return columns[i]?.align === 'right' ? fill + text : text + fill;
  };
  const lines = [
    header(
      columns
        .map((c, i) => pad(c.title, i))
        .join('  ')
        .trimEnd(),
    ),
  ];
  rows.forEach((row, r) =>
    lines.push(
      row
        .map((cell, i) => paint(r, i, pad(cell, i)))
        .join('  ')
        .trimEnd(),
    ),
  );
  return lines;
}

/** How a table paints its text: ANSI codes when colour is on, the text as it is otherwise. */
interface Painter {
  paint(code: string, text: string): string;
  bold(text: string): string;
  dim(text: string): string;
  /** In the colour of the emotion state a score or an emotion falls in. */
  byState(emotion: number, text: string): string;
}

function painter(color: boolean): Painter {
  const paint = (code: string, text: string) => (color ? `${code}${text}${RESET}` : text);
  return {
    paint,
    bold: (text) => paint(ANSI.bold, text),
    dim: (text) => paint(ANSI.dim, text),
    byState: (emotion, text) => paint(ANSI[emotionState(emotion)], text),
  };
}

/** The evaluation's name, where it came from, its models and settings, and its manifest. */
function headingLines(report: EvaluationReport, p: Painter): string[] {
  const source = report.runName ? ` · run ${report.runName}${report.step !== null ? `@${report.step}` : ''}` : '';
  return [
    `${p.bold(`Evaluation ${report.evalId}`)}${source}`,
    p.dim(`policy ${report.policyModel} · simulator ${report.simulatorModel} · scenarios ${report.scenarios}`),
    p.dim(
      [...dialoguePhrases(report.settings), `simulator temperature ${report.settings.simulatorTemperature}`].join(
        ' · ',
      ),
    ),
    ...manifestLines(report).map(p.dim),
  ];
}

/** The Sentient score with its interval, then the counts over all dialogues. */
function scoreLines(report: EvaluationReport, p: Painter): string[] {
  const tokens =
    report.tokens.policyPrompt +
    report.tokens.policyCompletion +
    report.tokens.simulatorPrompt +
    report.tokens.simulatorCompletion;
  const lines = [
    `${p.bold('Sentient score')}  ${p.byState(report.score, p.bold(`${num(report.score)} / 100`))}  (state ${emotionState(report.score)})`,
    intervalSummary(report),
    ...layout(
      [
        { title: 'SUCCESS', align: 'right' },
        { title: 'FAILURE', align: 'right' },
        { title: 'COUNT', align: 'right' },
        { title: 'FAILED', align: 'right' },
        { title: 'MEAN TURNS', align: 'right' },
        { title: 'TOKENS', align: 'right' },
      ],
      [
        [
          String(report.success),
          String(report.failure),
          String(report.count),
          String(report.failed),
          num(report.meanTurns),
          String(tokens),
        ],
      ],
      (_r, _c, cell) => cell,
      p.dim,
    ),
  ];
  if (report.failed > 0)
    lines.push(p.dim(`${report.failed} dialogue(s) failed to run: reported, excluded from the score`));
  return lines;
}

/**
 * One row per simulator after a blank line, the training simulator's first: its score with the
 * interval, and the gap (training score minus its own); nothing without held-out simulators.
 */
function simulatorTable(report: EvaluationReport, p: Painter): string[] {
  const simulators = report.simulators ?? [];
  if (simulators.length === 0) return [];
  const rows = simulators.map((s) => [
    s.training ? `${s.name} (training)` : s.name,
    s.environment.simulator.model,
    num(s.score),
    s.ci ? `${num(s.ci.low)}-${num(s.ci.high)}` : '-',
    s.training ? '-' : num(s.gap),
    String(s.count),
    String(s.failed),
    String(s.success),
    String(s.failure),
  ]);
  return [
    '',
    ...layout(
      [
        { title: 'SIMULATOR', align: 'left' },
        { title: 'MODEL', align: 'left' },
        { title: 'SCORE', align: 'right' },
        { title: '95% CI', align: 'right' },
        { title: 'GAP', align: 'right' },
        { title: 'N', align: 'right' },
        { title: 'FAILED', align: 'right' },
        { title: 'SUCCESS', align: 'right' },
        { title: 'FAILURE', align: 'right' },
      ],
      rows,
      (r, c, cell) => {
        const s = simulators[r];
        return c === 2 && s && s.count > 0 ? p.byState(s.score, cell) : cell;
      },
      p.dim,
    ),
    p.dim("GAP: the training simulator's score minus this one's"),
  ];
}

/** One row per group (goal type, personality) after a blank line; nothing when there are no groups. */
function groupTable(title: string, groups: Record<string, ScoreGroup>, p: Painter): string[] {
  const entries = Object.entries(groups);
  if (entries.length === 0) return [];
  const rows = entries.map(([name, g]) => [
    name,
    String(g.count),
    num(g.score),
    String(g.success),
    String(g.failure),
    num(g.meanTurns),
  ]);
  return [
    '',
    ...layout(
      [
        { title, align: 'left' },
        { title: 'N', align: 'right' },
        { title: 'SCORE', align: 'right' },
        { title: 'SUCCESS', align: 'right' },
        { title: 'FAILURE', align: 'right' },
        { title: 'MEAN TURNS', align: 'right' },
      ],
      rows,
      (r, c, cell) => {
        const group = entries[r]?.[1];
        return c === 2 && group && group.count > 0 ? p.byState(group.score, cell) : cell;
      },
      p.dim,
    ),
  ];
}

/** The groups' confidence intervals after a blank line, their header dimmed; nothing when there are none. */
function intervalLines(report: EvaluationReport, p: Painter): string[] {
  const intervals = intervalTable(report);
  return intervals.length > 0 ? ['', p.dim(intervals[0]!), ...intervals.slice(1)] : [];
}

/** One row per dialogue after a blank line: its final emotion, outcome and emotion curve, or its error. */
function scenarioTable(report: EvaluationReport, p: Painter): string[] {
  if (report.results.length === 0) return [];
  const rows = report.results.map((e) =>
    e.status === 'ok'
      ? [
          e.scenarioId,
          e.goalType,
          e.personality,
          emotion(e.finalEmotion),
          e.outcome,
          String(e.turns),
          `${emotionSparkline(e.emotions)}  ${truncate(e.emotions.join(' '), 34)}`,
        ]
      : [e.scenarioId, e.goalType, e.personality, '-', 'FAILED', '-', truncate(e.error, 60)],
  );
  return [
    '',
    ...layout(
      [
        { title: 'SCENARIO', align: 'left' },
        { title: 'GOAL TYPE', align: 'left' },
        { title: 'PERSONALITY', align: 'left' },
        { title: 'FINAL', align: 'right' },
        { title: 'OUTCOME', align: 'left' },
        { title: 'TURNS', align: 'right' },
        { title: 'EMOTIONS', align: 'left' },
      ],
      rows,
      (r, c, cell) => {
        const entry = report.results[r];
        if (!entry) return cell;
        if (entry.status === 'failed') return c === 4 || c === 6 ? p.paint(ANSI.F, cell) : cell;
        return c === 3 || c === 4 ? p.byState(entry.finalEmotion, cell) : cell;
      },
      p.dim,
    ),
  ];
}

/** The terminal table of an evaluation: overall numbers, then per goal type, per personality and per scenario. */
export function renderEvaluationTable(report: EvaluationReport, options: EvaluationTableOptions = {}): string {
  const p = painter(options.color ?? defaultColor());
  const out = [
    ...headingLines(report, p),
    '',
    ...scoreLines(report, p),
    ...simulatorTable(report, p),
    ...groupTable('GOAL TYPE', report.byGoalType, p),
    ...groupTable('PERSONALITY', report.byPersonality, p),
    ...intervalLines(report, p),
    ...scenarioTable(report, p),
  ];
  return `${out.join('\n')}\n`;
}
