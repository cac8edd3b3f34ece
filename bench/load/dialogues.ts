import { setMaxListeners } from 'node:events';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { AttuneConfig } from '../../src/config/schema.js';
import type { rollout } from '../../src/workflows/rollout.js';
import type { DialogueSpec } from '../orchestration/loops.js';
import { mapLimit, startBenchRollout } from '../orchestration/attuneRun.js';
import { progress } from './progress.js';

/** The rollouts of a run: started as bench/orchestration/attuneRun.ts starts them, waited for, and described. */

export type RolloutHandle = WorkflowHandle<typeof rollout>;

/** Starts one rollout per spec on the config's rollouts queue, `maxTurns` turns each. */
export function startRollouts(
  client: Client,
  config: AttuneConfig,
  taskQueue: string,
  specs: DialogueSpec[],
  maxTurns: number,
): Promise<RolloutHandle[]> {
  return mapLimit(specs, 256, (spec) => startBenchRollout(client, config, taskQueue, spec, maxTurns));
}

export type WaitEnd = 'calls answered' | 'none running' | 'deadline';

/**
 * Resolves once the dialogues are over: when the fake has answered every LLM call they should make,
 * or (should one fail or end early) when visibility shows none of the queue's rollouts running,
 * checked every 5 s (a query costs the cluster's database work, so not more often), or at the deadline.
 */
export async function waitForDialogues(
  client: Client,
  taskQueue: string,
  started: number,
  callsDone: () => boolean,
  deadlineMs: number,
): Promise<WaitEnd> {
  let nextCheck = Date.now() + 5000;
  let visibility = true;
  while (!callsDone()) {
    if (Date.now() >= deadlineMs) return 'deadline';
    if (visibility && Date.now() >= nextCheck) {
      try {
        const total = (await client.workflow.count(`TaskQueue = "${taskQueue}"`)).count;
        const running = (await client.workflow.count(`TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`))
          .count;
        progress('waiting', { rollouts: total, running });
        if (total >= started && running === 0) return 'none running';
      } catch (error) {
        visibility = false;
        progress('visibility count failed; waiting for the calls alone', {
          error: error instanceof Error ? error.message : String(error),
        });
      }
      nextCheck = Date.now() + 5000;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return 'calls answered';
}

export interface RolloutResult {
  /** Assistant turns in the rollout's result; null when it has none. */
  turns: number | null;
  error: string | null;
}

/**
 * Each rollout's result, waited for until `deadlineMs` (once the LLM calls are answered only the
 * transcript write is left); at the deadline the long polls still open are cancelled, so none is
 * left to retry on a connection closed later.
 */
export async function awaitResults(
  client: Client,
  handles: RolloutHandle[],
  deadlineMs: number,
): Promise<RolloutResult[]> {
  const abort = new AbortController();
  // One listener per result's long poll.
  setMaxListeners(handles.length + 16, abort.signal);
  const timer = setTimeout(() => abort.abort(), Math.max(0, deadlineMs - Date.now()));
  try {
    return await mapLimit(handles, 32, async (handle): Promise<RolloutResult> => {
      if (abort.signal.aborted) return { turns: null, error: 'no result before the deadline' };
      try {
        const summary = await client.connection.withAbortSignal(abort.signal, () => handle.result());
        return { turns: summary.turns, error: null };
      } catch (e) {
        if (abort.signal.aborted) return { turns: null, error: 'no result before the deadline' };
        const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : '';
        return { turns: null, error: e instanceof Error ? `${e.message}${cause}` : String(e) };
      }
    });
  } finally {
    clearTimeout(timer);
  }
}

export interface RolloutDescription {
  /** Temporal's status name (COMPLETED, FAILED, RUNNING, TIMED_OUT, ...), or UNKNOWN when it could not be described. */
  status: string;
  historyEvents: number | null;
  historyBytes: number | null;
  closedAtMs: number | null;
}

/** DescribeWorkflowExecution of each rollout: status, close time, history length and size. */
export function describeRollouts(handles: RolloutHandle[]): Promise<RolloutDescription[]> {
  return mapLimit(handles, 16, async (handle) => {
    try {
      const d = await handle.describe();
      return {
        status: d.status.name,
        historyEvents: d.historyLength,
        historyBytes: d.historySize ?? null,
        closedAtMs: d.closeTime ? d.closeTime.getTime() : null,
      };
    } catch {
      return { status: 'UNKNOWN', historyEvents: null, historyBytes: null, closedAtMs: null };
    }
  });
}
