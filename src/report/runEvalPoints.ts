/** The points of a run's Sentient-score curve: its evaluations, and the evaluations its steps name. */
import type { EvaluationReport } from '../core/evaluationReport.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';

/** A point on the Sentient-score curve, from an evaluation file or a step's `eval` field. */
export interface RunEvalPoint {
  evalId: string;
  step: number | null;
  score: number;
  success: number;
  failure: number;
  count: number;
  failed: number | null;
  createdAt: string | null;
}

export function runEvalPoints(steps: StepMetricsRecord[], evaluations: EvaluationReport[]): RunEvalPoint[] {
  const points = new Map<string, RunEvalPoint>();
  for (const e of evaluations) {
    points.set(e.evalId, {
      evalId: e.evalId,
      step: e.step,
      score: e.score,
      success: e.success,
      failure: e.failure,
      count: e.count,
      failed: e.failed,
      createdAt: e.createdAt,
    });
  }
  for (const s of steps) {
    if (!s.eval || points.has(s.eval.evalId)) continue;
    points.set(s.eval.evalId, {
      evalId: s.eval.evalId,
      step: s.step,
      score: s.eval.score,
      success: s.eval.success,
      failure: s.eval.failure,
      count: s.eval.count,
      failed: null,
      createdAt: null,
    });
  }
  return [...points.values()].sort(
    (a, b) => (a.step ?? -1) - (b.step ?? -1) || (a.createdAt ?? '').localeCompare(b.createdAt ?? ''),
  );
}
