import type { Client } from '@temporalio/client';
import {
  evaluationProgressQuery,
  type evaluation,
  type EvaluationProgress,
  type EvaluationSummary,
} from '../workflows/evaluation.js';
import type { FrontendLink } from './frontendLink.js';
import { followWorkflow, type FollowedWorkflow } from './workflowFollowing.js';

/**
 * An evaluation's progress every poll interval until it ends, and its summary, on the link's client. An
 * evaluation id is never run twice, so the id alone names the execution.
 */
export function followEvaluation(
  link: FrontendLink,
  evalId: string,
  pollMs: number,
): FollowedWorkflow<EvaluationProgress, EvaluationSummary> {
  const handle = (client: Client) => client.workflow.getHandle<typeof evaluation>(evalId);
  return followWorkflow(
    link,
    { result: (client) => handle(client).result(), query: (client) => handle(client).query(evaluationProgressQuery) },
    pollMs,
  );
}

/** The final counts, from the summary: what the query would answer once every dialogue has ended. */
export function finalEvaluationProgress(summary: EvaluationSummary): EvaluationProgress {
  return { total: summary.count + summary.failed, done: summary.count, failed: summary.failed, inFlight: 0 };
}
