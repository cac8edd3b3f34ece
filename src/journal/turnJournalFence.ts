import { ApplicationFailure } from '@temporalio/common';

/**
 * What orders a local turn's attempts: the workflow passes the history length of the workflow task
 * that scheduled it (`workflowInfo().historyLength`). A worker that takes a dialogue over after the
 * task timed out plays it in a later task, so its attempts carry a larger fence than any the stale
 * worker still runs, including one the stale worker starts only after it wakes up. Two attempts of
 * one task share its history length once the task has timed out (Temporal keeps the attempts after
 * the first out of the history until one completes), so `fenceAt`, the workflow time of the attempt
 * that scheduled it (its task's start), orders attempts of the same length. Without it (attempts of
 * the code before) it counts as 0: older than any attempt that has it.
 */
export interface AttemptFence {
  fence?: number;
  fenceAt?: number;
}

/** A fence as the journal holds it: the history length, then the task attempt's start (ms). */
export interface Fence {
  fence: number;
  at: number;
}

/** An attempt's fence from its history length and start (none without a length; no start counts 0). */
export const fenceOf = (length: number | undefined, at: number | undefined): Fence | undefined =>
  length === undefined ? undefined : { fence: length, at: at ?? 0 };

/** Whether fence `a` comes from a later workflow task (or task attempt) than `b`. */
export const laterFence = (a: Fence, b: Fence): boolean => a.fence > b.fence || (a.fence === b.fence && a.at > b.at);

/** The failure type of an attempt whose turn a newer attempt claimed: not retried (the newer one plays the turn). */
export const TURN_SUPERSEDED = 'TurnAttemptSuperseded';

export const isTurnSuperseded = (error: unknown): boolean =>
  error instanceof ApplicationFailure && error.type === TURN_SUPERSEDED;

/** The run's fence as fence.json holds it; one written before attempts had a start time counts it 0. */
export function runFenceOf(text: string | null): Fence | null {
  if (text === null) return null;
  try {
    const { fence, at } = JSON.parse(text) as { fence?: unknown; at?: unknown };
    if (typeof fence !== 'number' || !Number.isInteger(fence)) return null;
    return { fence, at: typeof at === 'number' && Number.isFinite(at) ? at : 0 };
  } catch {
    return null;
  }
}

/** The failure of an attempt from the workflow task at `fence` while the task (or task attempt) at `newest` plays its dialogue. */
export function newerTaskFailure(fenceFile: string, fence: Fence, newest: Fence | null) {
  const newer =
    newest === null
      ? null
      : newest.fence > fence.fence
        ? `a newer workflow task (at event ${newest.fence}; this attempt's at event ${fence.fence})`
        : `a newer attempt of the workflow task at event ${fence.fence} (started ${new Date(newest.at).toISOString()}; this one ${new Date(fence.at).toISOString()})`;
  const what =
    newer === null
      ? `the dialogue's journal is gone (${fenceFile}: its rollout has ended)`
      : `${newer} plays this dialogue (${fenceFile})`;
  return ApplicationFailure.nonRetryable(`${what}: this attempt stops`, TURN_SUPERSEDED);
}
