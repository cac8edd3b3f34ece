import { evaluationKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import {
  completeEvaluationReport,
  type EvaluationReport,
  type StoredEvaluationReport,
} from '../core/evaluationReport.js';

/** The full report an evaluation wrote to the artifact store (its workflow returns only the headline numbers). */
export async function loadEvaluationReport(store: ArtifactStore, evalId: string): Promise<EvaluationReport> {
  const key = evaluationKey(evalId);
  const stored = await store.getJson<unknown>(key);
  if (
    typeof stored !== 'object' ||
    stored === null ||
    (stored as { kind?: unknown }).kind !== 'attune.evaluation' ||
    !Array.isArray((stored as { results?: unknown }).results)
  )
    throw new Error(`${store.locate(key)} is not an evaluation report (kind "attune.evaluation")`);
  return completeEvaluationReport(stored as StoredEvaluationReport);
}
