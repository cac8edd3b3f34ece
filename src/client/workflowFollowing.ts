export interface FollowedWorkflow<S, R> {
  /** The workflow's status every poll interval; ends when the workflow ends. A status query that fails is skipped. */
  statuses: AsyncIterable<S>;
  result: Promise<R>;
}

function pause(ms: number): { done: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/** Polls `query` until `result` settles; what to show of each status is the caller's choice. */
export function followWorkflow<S, R>(
  result: Promise<R>,
  query: () => Promise<S>,
  pollMs: number,
): FollowedWorkflow<S, R> {
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
      const status = await Promise.race([query().catch(() => null), ended]);
      if (status === 'ended') return;
      if (status !== null) yield status;
    }
  }
  return { statuses: statuses(), result };
}
