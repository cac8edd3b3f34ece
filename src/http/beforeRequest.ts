import { AsyncLocalStorage } from 'node:async_hooks';
import { ownDeadlineFetch } from './ownDeadlines.js';

/**
 * A check the caller sets around a call (`beforeRequest.run(check, call)`), run by the LLM client's
 * fetch as the last step before the request leaves (after the endpoint's slot and token budget are
 * held): a local turn confirms there that no newer attempt took its turn over while it waited
 * (src/activities/dialogueTurn.ts). A failing check sends nothing.
 */
export const beforeRequest = new AsyncLocalStorage<() => Promise<void>>();

/** fetch without the 300 s limit on an answer's headers (`ownDeadlines.ts`), after the check the caller set (if any). */
export async function fetchAfterCheck(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  await beforeRequest.getStore()?.();
  return ownDeadlineFetch(input, init);
}
