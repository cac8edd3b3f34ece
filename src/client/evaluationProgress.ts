import type { WorkflowHandle } from '@temporalio/client';
import {
  evaluationProgressQuery,
  type evaluation,
  type EvaluationProgress,
  type EvaluationSummary,
} from '../workflows/evaluation.js';
import { followWorkflow, type FollowedWorkflow } from './workflowFollowing.js';

/** An evaluation's progress every poll interval until it ends, and its summary. */
export function followEvaluation(
  handle: WorkflowHandle<typeof evaluation>,
  pollMs: number,
): FollowedWorkflow<EvaluationProgress, EvaluationSummary> {
  return followWorkflow(handle.result(), () => handle.query(evaluationProgressQuery), pollMs);
}

/** The final counts, from the summary: what the query would answer once every dialogue has ended. */
export function finalEvaluationProgress(summary: EvaluationSummary): EvaluationProgress {
  return { total: summary.count + summary.failed, done: summary.count, failed: summary.failed, inFlight: 0 };
}
