import type { EvaluationComparison } from '../../client/evaluationComparison.js';
import { formatInterval } from './evaluationIntervals.js';

/** `attune eval compare` as a table: A, B and B-A per metric and per scenario, then the paired test. */
export function renderEvaluationComparison(c: EvaluationComparison): string {
  const sign = (n: number) => (n > 0 ? `+${n}` : `${n}`);
  const width = Math.max(8, ...c.scenarios.map((s) => s.id.length));
  const paired =
    c.difference === null || c.ci === null
      ? ['paired difference: no dialogue finished in both evaluations']
      : [
          `paired difference B-A ${sign(c.difference)}, 95 % CI ${formatInterval(c.ci)}, p = ${c.pValue}: ${c.verdict}`,
          `(${c.pairs} dialogue pair(s) over ${c.pairedScenarios} scenario(s); ${c.method})`,
        ];
  const lines = [
    `A = ${c.a}`,
    `B = ${c.b}`,
    '',
    `${'metric'.padEnd(width)}  ${'A'.padStart(7)}  ${'B'.padStart(7)}  ${'B-A'.padStart(7)}`,
    `${'score'.padEnd(width)}  ${String(c.score.a).padStart(7)}  ${String(c.score.b).padStart(7)}  ${sign(c.score.delta).padStart(7)}`,
    `${'success'.padEnd(width)}  ${String(c.success.a).padStart(7)}  ${String(c.success.b).padStart(7)}  ${sign(c.success.delta).padStart(7)}`,
    `${'failure'.padEnd(width)}  ${String(c.failure.a).padStart(7)}  ${String(c.failure.b).padStart(7)}  ${sign(c.failure.delta).padStart(7)}`,
    '',
    ...paired,
    '',
    ...c.scenarios.map(
      (s) =>
        `${s.id.padEnd(width)}  ${String(s.a ?? 'failed').padStart(7)}  ${String(s.b ?? 'failed').padStart(7)}  ${(s.delta === null ? '-' : sign(s.delta)).padStart(7)}`,
    ),
  ];
  return lines.join('\n');
}
