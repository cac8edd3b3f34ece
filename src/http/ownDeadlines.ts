import { Agent } from 'undici';

/**
 * A dispatcher for Attune's HTTP calls without undici's limit on the wait for an answer. Node's fetch
 * gives up on a request whose headers take over 300 s (`UND_ERR_HEADERS_TIMEOUT`), whatever deadline
 * the caller set: an optimizer step of a large model, a full-weight reload or an LLM call queued at a
 * busy server would fail at five minutes and be retried as "unreachable". Every caller sets its own
 * deadline (an AbortSignal, the OpenAI client's `timeout`), so that one decides. The limit on a body
 * that stalls once it has begun stays (300 s between chunks): no answer here streams slowly.
 */
export const ownDeadlineDispatcher = new Agent({ headersTimeout: 0 });

/** `init` for Node's fetch with the dispatcher above (`dispatcher` is an undici extension of RequestInit). */
export function withOwnDeadline(init: RequestInit): RequestInit {
  return { ...init, dispatcher: ownDeadlineDispatcher } as RequestInit;
}
