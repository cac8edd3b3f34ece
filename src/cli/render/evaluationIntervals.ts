import type { EvaluationReport } from '../../core/evaluationReport.js';
import type { GroupIntervals, Interval } from '../../core/evaluationStatistics.js';
import { dialoguePhrases } from '../../core/dialogueKeys.js';
import { difficultyText } from '../../core/difficulty.js';

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '-');

export function formatInterval(ci: Interval, digits = 2): string {
  return `[${fixed(ci.low, digits)}, ${fixed(ci.high, digits)}]`;
}

/** A rate as a percentage with its interval: `33.3 % [0.0, 66.7]`. */
function rate(r: GroupIntervals['successRate']): string {
  return `${fixed(r.value * 100, 1)} % ${formatInterval({ low: r.ci.low * 100, high: r.ci.high * 100 }, 1)}`;
}

/** The score's interval and the success and failure rates with theirs, in one line under the score. */
export function intervalSummary(report: EvaluationReport): string {
  const { overall, level } = report.intervals;
  const repeats = report.repeats > 1 ? ` x ${report.repeats} repeats` : '';
  return `${Math.round(level * 100)} % CI ${formatInterval(report.ci)} · success ${rate(overall.successRate)} · failure ${rate(overall.failureRate)} · bootstrap over ${overall.scenarios} scenario(s)${repeats}`;
}

/** Per goal type and personality: each group's score interval and its rates' intervals. */
export function intervalTable(report: EvaluationReport): string[] {
  const rows = [...Object.entries(report.intervals.byGoalType), ...Object.entries(report.intervals.byPersonality)].map(
    ([name, g]) => [name, String(g.dialogues), formatInterval(g.score), rate(g.successRate), rate(g.failureRate)],
  );
  if (rows.length === 0) return [];
  const header = ['GROUP', 'N', `SCORE ${Math.round(report.intervals.level * 100)} % CI`, 'SUCCESS', 'FAILURE'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** The manifest in two lines: what produced these numbers, so two evaluations can be told comparable. */
export function manifestLines(report: EvaluationReport): string[] {
  const m = report.manifest;
  if (!m) return ['manifest: none (written before manifests)'];
  const p = m.protocol;
  return [
    `manifest: attune ${m.attuneVersion} · simulator ${m.simulator.model} at ${m.simulator.baseURL} (difficulty ${difficultyText(m.simulator)}) · prompt hash ${m.promptHash} · seed ${m.seeds.base} x ${m.seeds.repeats} repeat(s)`,
    `protocol: ${dialoguePhrases(p).join(' · ')} · temperatures simulator ${p.simulatorTemperature}, policy ${p.policyTemperature} · max tokens simulator ${p.simulatorMaxTokens}, policy ${p.policyMaxTokens} · output ${p.structuredOutput} · policy prompt ${p.policySystemPrompt}`,
  ];
}
