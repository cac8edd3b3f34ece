/**
 * Rows of `attune runs list` and `attune evals list`, built from the executions Temporal's
 * visibility returns. A training run continues as new every step, so one run is a chain of
 * executions of one workflow id: its row takes the newest execution's search attributes, the
 * first execution's start and the newest event time any of them shows.
 */

/** What the listing needs of one execution; attributes absent on older executions are null. */
export interface ListedExecution {
  workflowId: string;
  /** Temporal's status name: RUNNING, COMPLETED, CONTINUED_AS_NEW, FAILED, ... */
  status: string;
  startTime: Date;
  closeTime: Date | null;
  runName: string | null;
  phase: string | null;
  step: number | null;
  meanReward: number | null;
}

export interface RunRow {
  name: string;
  /** The run's phase (`rollouts`, `optimizer`, `done`, ...), or how it ended when it did not complete. */
  phase: string | null;
  /** The last step applied (0 before the first). */
  step: number | null;
  lastReward: number | null;
  status: string;
  started: string;
  updated: string;
}

export interface EvaluationRow {
  id: string;
  /** Sentient score (mean final emotion, 0-100) once the evaluation has finished. */
  score: number | null;
  run: string | null;
  step: number | null;
  status: string;
  started: string;
  updated: string;
}

/** Statuses that end an execution without the workflow's own last word on its phase. */
const ABNORMAL_ENDS = new Set(['FAILED', 'TERMINATED', 'CANCELLED', 'TIMED_OUT']);

function lastEvent(e: ListedExecution): number {
  return (e.closeTime ?? e.startTime).getTime();
}

function byNewestFirst<T extends { updated: string }>(rows: T[]): T[] {
  return rows.sort((a, b) => b.updated.localeCompare(a.updated));
}

export function runRows(executions: ListedExecution[], trainingPrefix: string): RunRow[] {
  const chains = new Map<string, ListedExecution[]>();
  for (const e of executions) chains.set(e.workflowId, [...(chains.get(e.workflowId) ?? []), e]);
  const rows = [...chains.entries()].map(([workflowId, chain]): RunRow => {
    const newest = chain.reduce((a, b) => (b.startTime.getTime() > a.startTime.getTime() ? b : a));
    const first = Math.min(...chain.map((e) => e.startTime.getTime()));
    const updated = Math.max(...chain.map(lastEvent));
    const name =
      newest.runName ?? (workflowId.startsWith(trainingPrefix) ? workflowId.slice(trainingPrefix.length) : workflowId);
    return {
      name,
      phase: ABNORMAL_ENDS.has(newest.status) ? newest.status.toLowerCase() : newest.phase,
      step: newest.step,
      lastReward: newest.meanReward,
      status: newest.status,
      started: new Date(first).toISOString(),
      updated: new Date(updated).toISOString(),
    };
  });
  return byNewestFirst(rows);
}

/** The evaluation records its score as a reward (score / 100); shown back on the 0-100 scale. */
export function scoreFromMeanReward(meanReward: number | null): number | null {
  return meanReward === null ? null : Math.round(meanReward * 100 * 1e6) / 1e6;
}

export function evaluationRows(executions: ListedExecution[]): EvaluationRow[] {
  return byNewestFirst(
    executions.map((e) => ({
      id: e.workflowId,
      score: e.status === 'COMPLETED' ? scoreFromMeanReward(e.meanReward) : null,
      run: e.runName,
      step: e.step,
      status: e.status,
      started: e.startTime.toISOString(),
      updated: new Date(lastEvent(e)).toISOString(),
    })),
  );
}
