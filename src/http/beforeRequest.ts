import { AsyncLocalStorage } from 'node:async_hooks';
import { rmSync } from 'node:fs';
import type { Dispatcher } from 'undici';
import { LIMITS } from '../config/limits.js';
import { createLogger } from '../log.js';
import { fetchInOneWrite } from './fetchInOneWrite.js';
import { ownDeadlineDispatcher } from './ownDeadlines.js';

/**
 * A check the caller sets around a call (`beforeRequest.run({ check, leaseMs }, call)`), run by the
 * LLM client's fetch as the last step before the request leaves (after the endpoint's slot and token
 * budget are held): a local turn confirms there that no newer attempt took its turn over while it
 * waited (src/activities/dialogueTurn.ts). A failing check sends nothing. The check holds for
 * `leaseMs`: a request that would leave later than that after its check began (the worker was
 * stopped, or its event loop stalled, in between) is stopped as it is about to be written, and the
 * check runs again.
 */
export const beforeRequest = new AsyncLocalStorage<RequestCheck>();

export interface RequestCheck {
  check: () => Promise<void>;
  leaseMs: number;
}

/** The check a request leaves under: when it began (performance.now(), which counts a stopped process's time). */
interface Lease {
  checkedAtMs: number;
  leaseMs: number;
}
const leases = new AsyncLocalStorage<Lease>();
const log = createLogger({ component: 'request-check' });

/** A request stopped before its first byte: its check was older than its lease. */
class CheckOutlived extends Error {
  constructor(readonly lease: Lease) {
    super(
      `the request's check was ${Math.round(performance.now() - lease.checkedAtMs)} ms old as the request was about to leave (lease ${lease.leaseMs} ms): not sent`,
    );
  }
}

/**
 * `handler`, stopped at its onConnect if the lease has run out: undici calls onConnect synchronously
 * just before it writes the request to the socket, the last moment to stop it, and a throw there fails
 * the request with nothing written.
 */
function leasedHandler(handler: Dispatcher.DispatchHandlers, lease: Lease): Dispatcher.DispatchHandlers {
  return new Proxy(handler, {
    get(target, key) {
      if (key === 'onConnect')
        return (abort: (err?: Error) => void) => {
          const ageMs = performance.now() - lease.checkedAtMs;
          if (ageMs >= lease.leaseMs) throw new CheckOutlived(lease);
          log.debug('a checked request leaves', { ageMs: Math.round(ageMs) });
          target.onConnect?.(abort);
        };
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The own-deadline dispatcher, each request under a lease carrying it to the moment it is written. */
const leasedDispatcher = ownDeadlineDispatcher.compose((dispatch) => (options, handler) => {
  // Read here, in the request's own async context; onConnect may run in a connection's.
  const lease = leases.getStore();
  return dispatch(options, lease ? leasedHandler(handler, lease) : handler);
});

const outlived = (error: unknown): error is Error =>
  error instanceof CheckOutlived || (error instanceof Error && error.cause instanceof CheckOutlived);

/**
 * Test-only fault: with `ATTUNE_TEST_ONLY_STOP_AFTER_CHECK=FILE`, the first check to pass once FILE
 * exists removes it and stops this process (SIGSTOP) before its request leaves, as a host frozen at
 * the worst moment; the test wakes it (SIGCONT) once another worker took its dialogue over. Off unless set.
 */
export const STOP_AFTER_CHECK_ENV = 'ATTUNE_TEST_ONLY_STOP_AFTER_CHECK';

function stopOnceIfArmed(env: NodeJS.ProcessEnv = process.env): void {
  const armed = env[STOP_AFTER_CHECK_ENV];
  if (!armed) return;
  try {
    rmSync(armed);
  } catch {
    return; // not armed, or fired already
  }
  process.kill(process.pid, 'SIGSTOP');
}

/**
 * fetch without the 300 s limit on an answer's headers (`ownDeadlines.ts`), after the check the
 * caller set (if any), checked again while the check outlives its lease before the request leaves.
 * The request is written in the same synchronous step as the lease's last look (fetchInOneWrite.ts).
 */
export async function fetchAfterCheck(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const request = beforeRequest.getStore();
  if (!request) return fetchInOneWrite(ownDeadlineDispatcher, input, init);
  for (let attempt = 1; ; attempt++) {
    const lease = { checkedAtMs: performance.now(), leaseMs: request.leaseMs };
    await request.check();
    stopOnceIfArmed();
    try {
      return await leases.run(lease, () => fetchInOneWrite(leasedDispatcher, input, init));
    } catch (error) {
      if (!outlived(error)) throw error;
      if (attempt >= LIMITS.requestCheckTries)
        throw new Error(
          `${LIMITS.requestCheckTries} checks in a row outlived their ${request.leaseMs} ms lease before the request could leave: this worker's event loop stalls`,
          { cause: error },
        );
      log.info('a request outlived its check before it could leave; checking again', {
        attempt,
        error: (error.cause instanceof Error ? error.cause : error).message,
      });
    }
  }
}
