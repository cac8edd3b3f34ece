import type { Client } from '@temporalio/client';
import { isTransientConnectionError } from '../temporal/transientErrors.js';
import type { FrontendLink } from './frontendLink.js';

export interface FollowedWorkflow<S, R> {
  /** The workflow's status every poll interval; ends when the workflow ends. A status query that fails is skipped. */
  statuses: AsyncIterable<S>;
  result: Promise<R>;
}

/** The two calls a follower makes, on whichever client its link holds at the time. */
export interface WorkflowCalls<S, R> {
  /** The workflow's result (asked again, on a new client, after the frontend was lost). */
  result(client: Client): Promise<R>;
  query(client: Client): Promise<S>;
}

function pause(ms: number): { done: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/**
 * The result, through any number of lost frontends: a transient connection error (UNAVAILABLE, a refused
 * connection, the SDK's "Failed to get Workflow execution history" over one) waits for the link to reach
 * the server again and asks again; any other error (the workflow failed, was terminated, cancelled, or is
 * not found) is the result's.
 */
async function lastingResult<R>(link: FrontendLink, result: (client: Client) => Promise<R>): Promise<R> {
  for (;;) {
    try {
      return await result(link.client);
    } catch (error) {
      if (!isTransientConnectionError(error)) throw error;
      await link.regain(error);
    }
  }
}

/** Polls the status until the result settles; what to show of each status is the caller's choice. */
export function followWorkflow<S, R>(
  link: FrontendLink,
  calls: WorkflowCalls<S, R>,
  pollMs: number,
): FollowedWorkflow<S, R> {
  const result = lastingResult(link, (client) => calls.result(client));
  const ended = result.then(
    () => 'ended' as const,
    () => 'ended' as const,
  );
  async function* statuses(): AsyncGenerator<S> {
    for (;;) {
      const wait = pause(pollMs);
      const woke = await Promise.race([ended, wait.done]);
      wait.cancel();
      if (woke === 'ended') return;
      const status = await Promise.race([calls.query(link.client).catch(() => null), ended]);
      if (status === 'ended') return;
      if (status !== null) yield status;
    }
  }
  return { statuses: statuses(), result };
}
