import type { EvaluationReport } from '../../core/evaluation.js';

/** Compact summary of an evaluation for the terminal. */
export function renderEvaluationSummary(r: EvaluationReport): string {
  const lines = [
    `Evaluation ${r.evalId}: policy ${r.policyModel}, simulator ${r.simulatorModel}`,
    `Sentient score ${r.score} over ${r.count} dialogue(s); success ${r.success}, failure ${r.failure}, failed to run ${r.failed}; mean turns ${r.meanTurns}`,
  ];
  for (const e of r.results) {
    lines.push(e.status === 'ok'
      ? `  ${e.scenarioId.padEnd(52)} ${String(e.finalEmotion).padStart(3)}  ${e.outcome.padEnd(10)} ${e.turns} turns`
      : `  ${e.scenarioId.padEnd(52)} failed: ${e.error}`);
  }
  return lines.join('\n');
}
