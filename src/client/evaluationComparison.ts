import type { EvaluationReport } from '../core/evaluationReport.js';

export interface EvaluationComparison {
  a: string;
  b: string;
  score: { a: number; b: number; delta: number };
  success: { a: number; b: number; delta: number };
  failure: { a: number; b: number; delta: number };
  scenarios: { id: string; a: number | null; b: number | null; delta: number | null }[];
}

/** Aggregate and per-scenario differences B - A; a scenario that failed to run (or is missing) has no delta. */
export function compareEvaluations(a: EvaluationReport, b: EvaluationReport): EvaluationComparison {
  const finals = (r: EvaluationReport) =>
    new Map(r.results.map((e) => [e.scenarioId, e.status === 'ok' ? e.finalEmotion : null]));
  const fa = finals(a);
  const fb = finals(b);
  const ids = [...new Set([...fa.keys(), ...fb.keys()])].sort();
  const d = (x: number, y: number) => Math.round((y - x) * 100) / 100;
  return {
    a: a.evalId,
    b: b.evalId,
    score: { a: a.score, b: b.score, delta: d(a.score, b.score) },
    success: { a: a.success, b: b.success, delta: b.success - a.success },
    failure: { a: a.failure, b: b.failure, delta: b.failure - a.failure },
    scenarios: ids.map((id) => {
      const x = fa.get(id) ?? null;
      const y = fb.get(id) ?? null;
      return { id, a: x, b: y, delta: x !== null && y !== null ? y - x : null };
    }),
  };
}
