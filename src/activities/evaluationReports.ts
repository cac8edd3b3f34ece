import { evaluationKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import { completeEvaluationReport, type StoredEvaluationReport } from '../core/evaluationReport.js';

export function createEvaluationActivities(store: ArtifactStore) {
  return {
    /** Idempotent: keyed by the evaluation id. Adds the bootstrap intervals, computed here rather than in the workflow. */
    async saveEvaluation(report: StoredEvaluationReport): Promise<string> {
      return store.putJson(evaluationKey(report.evalId), completeEvaluationReport(report));
    },
  };
}
