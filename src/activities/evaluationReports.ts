import { evaluationKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import type { EvaluationReport } from '../core/evaluationReport.js';

export function createEvaluationActivities(store: ArtifactStore) {
  return {
    /** Idempotent: keyed by the evaluation id. */
    async saveEvaluation(report: EvaluationReport): Promise<string> {
      return store.putJson(evaluationKey(report.evalId), report);
    },
  };
}
