import { isRetryableError } from '@temporalio/client';

/** The gRPC status codes used here, as grpc/status.proto numbers them. */
const GRPC = { DEADLINE_EXCEEDED: 4, RESOURCE_EXHAUSTED: 8, INTERNAL: 13, UNAVAILABLE: 14 } as const;

/**
 * gRPC codes that say the frontend is away, restarting or overloaded, not that the call was wrong:
 * the same call on a connection that answers again can succeed. INTERNAL counts only where the SDK's
 * own retry counts it (an HTTP/2 stream reset by a restarting server or a proxy, never a TLS alert).
 */
const TRANSIENT_GRPC_CODES: ReadonlySet<number> = new Set([
  GRPC.UNAVAILABLE,
  GRPC.DEADLINE_EXCEEDED,
  GRPC.RESOURCE_EXHAUSTED,
]);

/** Socket errors of a server that is down, restarting or unreachable for now. */
const TRANSIENT_SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** What grpc-js's waitForReady (under `Connection.connect`) rejects with when no connection came up in time. */
const NOT_READY_MESSAGE = /^Failed to connect before the deadline/;

/** How deep the `cause` chain is searched: the SDK wraps a gRPC error once or twice, Attune once more. */
const MAX_CAUSE_DEPTH = 6;

function isTransientOne(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, details, message } = error as { code?: unknown; details?: unknown; message?: unknown };
  if (typeof code === 'number' && typeof details === 'string') {
    if (TRANSIENT_GRPC_CODES.has(code)) return true;
    if (code === GRPC.INTERNAL)
      return isRetryableError({ code, details, metadata: undefined } as unknown as Parameters<
        typeof isRetryableError
      >[0]);
    return false;
  }
  if (typeof code === 'string' && TRANSIENT_SOCKET_CODES.has(code)) return true;
  return typeof message === 'string' && NOT_READY_MESSAGE.test(message);
}

/**
 * Whether `error` (or an error it was caused by) means the Temporal frontend could not be reached for
 * now: UNAVAILABLE, DEADLINE_EXCEEDED, a refused or reset connection, a connection that never came up,
 * as well as the SDK's "Failed to get Workflow execution history" when that is its cause. A workflow that
 * failed, was terminated, cancelled or not found is no such error: its gRPC code (NOT_FOUND) or its
 * failure (a `WorkflowFailedError`) says so.
 */
export function isTransientConnectionError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && current !== undefined && current !== null; depth++) {
    if (isTransientOne(current)) return true;
    current = typeof current === 'object' ? (current as { cause?: unknown }).cause : undefined;
  }
  return false;
}
