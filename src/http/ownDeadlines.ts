import { Agent, fetch as undiciFetch } from 'undici';

/**
 * A dispatcher for Attune's HTTP calls without undici's limit on the wait for an answer. Node's fetch
 * gives up on a request whose headers take over 300 s (`UND_ERR_HEADERS_TIMEOUT`), whatever deadline
 * the caller set: an optimizer step of a large model, a full-weight reload or an LLM call queued at a
 * busy server would fail at five minutes and be retried as "unreachable". Every caller sets its own
 * deadline (an AbortSignal, the OpenAI client's `timeout`), so that one decides. The limit on a body
 * that stalls once it has begun stays (300 s between chunks): no answer here streams slowly.
 */
export const ownDeadlineDispatcher = new Agent({ headersTimeout: 0 });

/**
 * fetch through the dispatcher above. It is the `undici` package's own fetch, not Node's global one:
 * a dispatcher only works with the fetch of its own undici release, and Node's bundled undici moves
 * with Node (Node 26's global fetch refuses an undici 6 Agent with UND_ERR_INVALID_ARG).
 */
export const ownDeadlineFetch = ((input: string | URL | Request, init?: RequestInit) =>
  undiciFetch(
    input as Parameters<typeof undiciFetch>[0],
    { ...init, dispatcher: ownDeadlineDispatcher } as Parameters<typeof undiciFetch>[1],
  )) as unknown as typeof fetch;
