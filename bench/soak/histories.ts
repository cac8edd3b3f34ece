import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** Temporal's hard limits on one workflow execution's history (the server fails the workflow past them). */
export const HISTORY_LIMITS = { events: 51_200, bytes: 50 * 1024 * 1024 } as const;

/** One workflow execution's history: its size, and the step it belongs to. */
export interface HistorySize {
  workflowId: string;
  runId: string;
  kind: 'training' | 'rollout' | 'other';
  step: number;
  events: number;
  bytes: number;
}

/** A rollout's workflow id names its step (src/core/training/stepPlan.ts: `RUN--sSTEP--...`). */
const ROLLOUT_STEP = /--s(\d+)--/;

/**
 * Every workflow execution of the run in the namespace (each continue-as-new execution of the
 * training workflow, every rollout), with its event count and encoded size. A training execution
 * belongs to the step the run was at when it started (`stepAt`), a rollout to the step its id names.
 */
export async function historySizes(
  client: Client,
  runName: string,
  stepAt: (atMs: number) => number,
): Promise<HistorySize[]> {
  const executions: { workflowId: string; runId: string; startMs: number }[] = [];
  for await (const info of client.workflow.list())
    if (info.workflowId.includes(runName))
      executions.push({ workflowId: info.workflowId, runId: info.runId, startMs: info.startTime.getTime() });
  const out: HistorySize[] = [];
  // A few at a time: the dev server shares the machine with the run's own processes.
  for (let i = 0; i < executions.length; i += 4) {
    const batch = executions.slice(i, i + 4);
    out.push(
      ...(await Promise.all(
        batch.map(async (e) => {
          const history = await client.workflow.getHandle(e.workflowId, e.runId).fetchHistory();
          const rollout = ROLLOUT_STEP.exec(e.workflowId);
          const kind: HistorySize['kind'] = rollout
            ? 'rollout'
            : e.workflowId.startsWith('train-')
              ? 'training'
              : 'other';
          return {
            workflowId: e.workflowId,
            runId: e.runId,
            kind,
            step: rollout ? Number(rollout[1]) : stepAt(e.startMs),
            events: history.events?.length ?? 0,
            bytes: temporal.api.history.v1.History.encode(history).finish().length,
          };
        }),
      )),
    );
  }
  return out;
}
