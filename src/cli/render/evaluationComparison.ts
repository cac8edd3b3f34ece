import type { EvaluationComparison } from '../../client/evaluationComparison.js';

/** `attune eval compare` as a table: A, B and B-A per metric and per scenario. */
export function renderEvaluationComparison(c: EvaluationComparison): string {
  const sign = (n: number) => (n > 0 ? `+${n}` : `${n}`);
  const width = Math.max(8, ...c.scenarios.map((s) => s.id.length));
  const lines = [
    `A = ${c.a}`,
    `B = ${c.b}`,
    '',
    `${'metric'.padEnd(width)}  ${'A'.padStart(7)}  ${'B'.padStart(7)}  ${'B-A'.padStart(7)}`,
    `${'score'.padEnd(width)}  ${String(c.score.a).padStart(7)}  ${String(c.score.b).padStart(7)}  ${sign(c.score.delta).padStart(7)}`,
    `${'success'.padEnd(width)}  ${String(c.success.a).padStart(7)}  ${String(c.success.b).padStart(7)}  ${sign(c.success.delta).padStart(7)}`,
    `${'failure'.padEnd(width)}  ${String(c.failure.a).padStart(7)}  ${String(c.failure.b).padStart(7)}  ${sign(c.failure.delta).padStart(7)}`,
    '',
    ...c.scenarios.map(
      (s) =>
        `${s.id.padEnd(width)}  ${String(s.a ?? 'failed').padStart(7)}  ${String(s.b ?? 'failed').padStart(7)}  ${(s.delta === null ? '-' : sign(s.delta)).padStart(7)}`,
    ),
  ];
  return lines.join('\n');
}
