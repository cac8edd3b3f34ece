import type { Client } from '@temporalio/client';
import type { Logger } from '../log.js';
import { isTransientConnectionError } from '../temporal/transientErrors.js';

/**
 * The client a follower makes its calls on, and how it gets a working one back after the Temporal
 * frontend went away (a restart, a stall): `regain` returns once `client` is one that answers.
 */
export interface FrontendLink {
  readonly client: Client;
  /** Waits until a client answers again, or rejects with `lost` when the link does not reconnect. */
  regain(lost: unknown): Promise<void>;
  /** Closes the connections the link opened itself (not the one it was given). */
  close(): Promise<void>;
}

/** A link that never reconnects: a lost frontend ends the follow (in-process callers, tests). */
export function steadyLink(client: Client): FrontendLink {
  return {
    client,
    regain: (lost) => Promise.reject(lost instanceof Error ? lost : new Error(String(lost))),
    close: () => Promise.resolve(),
  };
}

/**
 * The waits between tries to reach a lost frontend: 1 s, doubling up to 10 s, with no last try (a
 * follower waits as long as its run goes on; Ctrl-C ends it). The first try comes after the SDK's own
 * retries of the failed call (about 20 s) have run out.
 */
export const RECONNECT_SCHEDULE = { initialMs: 1000, factor: 2, maxMs: 10_000 } as const;

export function reconnectDelayMs(attempt: number): number {
  return Math.min(RECONNECT_SCHEDULE.maxMs, RECONNECT_SCHEDULE.initialMs * RECONNECT_SCHEDULE.factor ** attempt);
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export interface ReconnectingLinkOptions {
  client: Client;
  /** The frontend's address, for the log line. */
  address: string;
  /** A new connection to the same server, once it has answered one call. */
  connect: () => Promise<{ client: Client; close(): Promise<void> }>;
  log: Logger;
  /** Aborted when the command stops (Ctrl-C): the link then gives up at once, with the error it lost the frontend on. */
  signal?: AbortSignal;
  /** The wait before try `attempt` (from 0); `reconnectDelayMs` unless a test needs shorter waits. */
  delayMs?: (attempt: number) => number;
}

/**
 * A link that reconnects after a transient connection error: it logs "lost the Temporal frontend at
 * ADDRESS, following again in N s", waits by `RECONNECT_SCHEDULE` and opens a new connection (a gRPC
 * channel that failed for long backs off up to 2 minutes before it tries the server again), for as long
 * as it takes. An error that is not transient (a wrong API key after a restart) ends the follow.
 */
export function reconnectingLink(options: ReconnectingLinkOptions): FrontendLink {
  const { address, connect, log, signal, delayMs = reconnectDelayMs } = options;
  let client = options.client;
  let closeOwn: (() => Promise<void>) | null = null;
  return {
    get client() {
      return client;
    },
    async regain(lost) {
      let error = lost;
      for (let attempt = 0; ; attempt++) {
        if (signal?.aborted || !isTransientConnectionError(error)) throw error;
        const waitMs = delayMs(attempt);
        log.warn(`lost the Temporal frontend at ${address}, following again in ${Math.ceil(waitMs / 1000)} s`, {
          address,
          attempt: attempt + 1,
          error: error instanceof Error ? error : String(error),
        });
        await pause(waitMs, signal);
        if (signal?.aborted) throw lost;
        try {
          const fresh = await connect();
          const previous = closeOwn;
          client = fresh.client;
          closeOwn = () => fresh.close();
          await previous?.().catch(() => undefined);
          log.info(`reached the Temporal frontend at ${address} again: following on`, { address });
          return;
        } catch (failed) {
          error = failed;
        }
      }
    },
    async close() {
      await closeOwn?.();
      closeOwn = null;
    },
  };
}
