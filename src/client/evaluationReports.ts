import { evaluationKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import type { EvaluationReport } from '../core/evaluationReport.js';

/** The full report an evaluation wrote to the artifact store (its workflow returns only the headline numbers). */
export function loadEvaluationReport(store: ArtifactStore, evalId: string): Promise<EvaluationReport> {
  return store.getJson<EvaluationReport>(evaluationKey(evalId));
}
