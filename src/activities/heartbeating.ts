import { Context } from '@temporalio/activity';

type ActivityFunctions = Record<string, (...args: never[]) => Promise<unknown>>;

/**
 * The same activities, heartbeating while they run, for activities that do one long wait (an LLM
 * request): with a heartbeat timeout the server notices a dead worker within that timeout and
 * retries the call elsewhere. No details are sent, so only wrap activities that keep none (a turn
 * activity heartbeats its finished calls itself), and local activities cannot heartbeat at all.
 */
export function heartbeating<T extends ActivityFunctions>(activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      const context = Context.current();
      const timeoutMs = context.info.heartbeatTimeoutMs;
      if (context.info.isLocal || !timeoutMs) return fn(...args);
      // No heartbeat at the start: the server times the heartbeat timeout from the start already,
      // and the SDK sends a first heartbeat at once, a server write for nearly every call.
      const ticker = setInterval(() => context.heartbeat(), Math.max(500, timeoutMs / 3));
      try {
        return await fn(...args);
      } finally {
        clearInterval(ticker);
      }
    };
  }
  return wrapped as T;
}
