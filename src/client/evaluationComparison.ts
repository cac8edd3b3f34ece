import { isEnvironmentField, manifestDifferences, manifestFieldDifferences } from '../core/evaluationManifest.js';
import type { EvaluationReport } from '../core/evaluationReport.js';
import type { Interval } from '../core/evaluationStatistics.js';
import { pairedDifference, type Pair } from '../core/statistics/pairedDifference.js';

export interface EvaluationComparison {
  a: string;
  b: string;
  score: { a: number; b: number; delta: number };
  success: { a: number; b: number; delta: number };
  failure: { a: number; b: number; delta: number };
  /** Mean paired difference B - A of final emotion over dialogues finished in both (same scenario, same repeat). */
  difference: number | null;
  /** Its 95 % interval: percentile bootstrap over scenarios. */
  ci: Interval | null;
  /** Two-sided p-value of a sign-flip permutation test over scenarios (exact up to 16 scenarios). */
  pValue: number;
  significant: boolean;
  /** `significant at the 5 % level` or `not significant`, in words for people. */
  verdict: string;
  pairs: number;
  pairedScenarios: number;
  method: string;
  /** Protocol differences between the two manifests (also printed to stderr). */
  warnings: string[];
  /** The environment fields (protocol, simulator, prompts) in which the two differ: their scores do not compare. */
  environmentDiffers: string[];
  /** Per scenario: mean final emotion of its finished dialogues on each side, and the mean paired difference. */
  scenarios: { id: string; a: number | null; b: number | null; delta: number | null }[];
  /** Per dialogue (scenario and repeat, 0-based): the pairs the statistics use. */
  dialogues: { id: string; repeat: number; a: number | null; b: number | null; delta: number | null }[];
}

export const COMPARISON_METHOD =
  'paired by scenario and repeat; 95 % percentile bootstrap over scenarios; two-sided sign-flip permutation test over scenarios';

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Aggregate and per-dialogue differences B - A, with a paired interval and test; a dialogue missing or failed on either side does not pair. */
export function compareEvaluations(a: EvaluationReport, b: EvaluationReport): EvaluationComparison {
  const finals = (r: EvaluationReport) =>
    new Map(
      r.results.map((e) => [
        `${e.scenarioId}\u0000${e.repeat ?? 0}`,
        { id: e.scenarioId, repeat: e.repeat ?? 0, final: e.status === 'ok' ? e.finalEmotion : null },
      ]),
    );
  const fa = finals(a);
  const fb = finals(b);
  const keys = [...new Set([...fa.keys(), ...fb.keys()])];
  const dialogues = keys
    .map((key) => {
      const x = fa.get(key);
      const y = fb.get(key);
      const { id, repeat } = (x ?? y)!;
      const av = x?.final ?? null;
      const bv = y?.final ?? null;
      return { id, repeat, a: av, b: bv, delta: av !== null && bv !== null ? bv - av : null };
    })
    .sort((p, q) => p.id.localeCompare(q.id) || p.repeat - q.repeat);
  const pairs: Pair[] = dialogues.flatMap((s) =>
    s.a !== null && s.b !== null ? [{ cluster: s.id, a: s.a, b: s.b }] : [],
  );
  const paired = pairedDifference(pairs);
  const d = (x: number, y: number) => round(y - x);
  return {
    a: a.evalId,
    b: b.evalId,
    score: { a: a.score, b: b.score, delta: d(a.score, b.score) },
    success: { a: a.success, b: b.success, delta: b.success - a.success },
    failure: { a: a.failure, b: b.failure, delta: b.failure - a.failure },
    difference: pairs.length === 0 ? null : round(paired.difference),
    ci: pairs.length === 0 ? null : { low: round(paired.ci.low), high: round(paired.ci.high) },
    pValue: round(paired.pValue, 4),
    significant: paired.significant,
    verdict: paired.significant ? 'significant at the 5 % level' : 'not significant',
    pairs: paired.pairs,
    pairedScenarios: paired.clusters,
    method: COMPARISON_METHOD,
    warnings: manifestDifferences(a.manifest, b.manifest, { a: a.evalId, b: b.evalId }),
    environmentDiffers:
      a.manifest && b.manifest
        ? manifestFieldDifferences(a.manifest, b.manifest)
            .map((d) => d.field)
            .filter(isEnvironmentField)
        : [],
    scenarios: perScenario(dialogues),
    dialogues,
  };
}

function perScenario(dialogues: EvaluationComparison['dialogues']): EvaluationComparison['scenarios'] {
  const mean = (values: number[]) =>
    values.length === 0 ? null : round(values.reduce((sum, v) => sum + v, 0) / values.length);
  const ids = [...new Set(dialogues.map((d) => d.id))];
  return ids.map((id) => {
    const own = dialogues.filter((d) => d.id === id);
    const finished = (side: 'a' | 'b') => own.flatMap((d) => (d[side] === null ? [] : [d[side]]));
    return {
      id,
      a: mean(finished('a')),
      b: mean(finished('b')),
      delta: mean(own.flatMap((d) => (d.delta === null ? [] : [d.delta]))),
    };
  });
}
