/** Temporal's workflow-task timeout when a workflow sets none. */
export const TEMPORAL_DEFAULT_WORKFLOW_TASK_TIMEOUT_MS = 10_000;

/**
 * How long a local turn's check before a request (its claim confirmed: no newer attempt took the
 * dialogue over) stays good, for rollouts whose workflow task times out after `workflowTaskTimeoutMs`.
 * Another worker can take a dialogue over only once that task timed out, and the worker reports on it
 * at 80 % of the timeout, so at the earliest a fifth of the timeout after this worker stopped (SIGSTOP,
 * a stalled host). Half of that: a request leaving later than this after its check checks again, so a
 * worker that was stopped between the two sends nothing once it wakes up.
 */
export function requestCheckLeaseMs(workflowTaskTimeoutMs: number | undefined): number {
  return Math.floor((workflowTaskTimeoutMs ?? TEMPORAL_DEFAULT_WORKFLOW_TASK_TIMEOUT_MS) / 10);
}
