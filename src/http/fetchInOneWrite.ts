import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';

/**
 * fetch as the OpenAI client uses it, over `dispatcher.request` with the body read into one buffer
 * first. undici's own fetch hands its dispatcher the body as an async iterable, and writes the
 * request's head with the body's first chunk several promise steps after the handler's `onConnect`:
 * a process stopped in between (SIGSTOP, a stalled host) sends the request when it wakes, whatever
 * onConnect checked. With a buffer, undici writes head and body in the same synchronous step as
 * onConnect, so a check made there is the last thing before the bytes reach the socket.
 *
 * Redirects are followed as fetch follows them (up to 20; 307 and 308 keep the method and body, 301
 * and 302 after a POST and 303 go on as a GET without it; Authorization is dropped across origins),
 * unless `redirect` is `manual` (the 3xx is returned) or `error`. What it does not do, being for API
 * calls: decode compressed answers (it asks for none) or set `response.url`. Failures take fetch's
 * shapes: a network error is a TypeError "fetch failed" with the cause, an abort is the signal's reason.
 */
export async function fetchInOneWrite(
  dispatcher: Dispatcher,
  input: string | URL | Request,
  init: RequestInit = {},
): Promise<Response> {
  const request = input instanceof Request ? input : null;
  let url = new URL(request ? request.url : String(input));
  const headers = new Headers(request?.headers);
  for (const [name, value] of new Headers(init.headers)) headers.set(name, value);
  const signal = init.signal ?? request?.signal ?? undefined;
  let method = (init.method ?? request?.method ?? 'GET').toUpperCase();
  // Encoded as fetch would: a string as UTF-8, form data with its boundary in the content type.
  const encoded =
    init.body != null ? new Response(init.body) : request?.body ? new Response(await request.arrayBuffer()) : null;
  let body = encoded ? Buffer.from(await encoded.arrayBuffer()) : null;
  const contentType = encoded?.headers.get('content-type');
  if (contentType && !headers.has('content-type')) headers.set('content-type', contentType);
  const redirect = init.redirect ?? request?.redirect ?? 'follow';
  for (let hops = 0; ; hops++) {
    const answer = await sent(dispatcher, url, method, headers, body, signal);
    const location = answer.headers.location;
    if (![301, 302, 303, 307, 308].includes(answer.statusCode) || typeof location !== 'string' || redirect === 'manual')
      return responseOf(answer);
    answer.body.resume();
    if (redirect === 'error' || hops >= MAX_REDIRECTS)
      throw new TypeError('fetch failed', {
        cause: new Error(redirect === 'error' ? `redirected to ${location}` : `more than ${MAX_REDIRECTS} redirects`),
      });
    const next = new URL(location, url);
    if (next.origin !== url.origin) headers.delete('authorization');
    if (
      answer.statusCode === 303 ? method !== 'GET' && method !== 'HEAD' : answer.statusCode <= 302 && method === 'POST'
    ) {
      method = 'GET';
      body = null;
      for (const name of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'])
        headers.delete(name);
    }
    url = next;
  }
}

const MAX_REDIRECTS = 20;

/** One request through `dispatcher`, failing as fetch fails. */
async function sent(
  dispatcher: Dispatcher,
  url: URL,
  method: string,
  headers: Headers,
  body: Buffer | null,
  signal: AbortSignal | undefined,
): Promise<Dispatcher.ResponseData> {
  signal?.throwIfAborted();
  try {
    return await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: method as Dispatcher.HttpMethod,
      headers: Object.fromEntries(headers),
      body,
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw new TypeError('fetch failed', { cause: error });
  }
}

/** undici's answer as a fetch Response, its body streamed. */
function responseOf(answer: Dispatcher.ResponseData): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers))
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
  // Statuses that carry no body: a Response refuses one.
  if ([101, 204, 205, 304].includes(answer.statusCode)) {
    answer.body.resume();
    return new Response(null, { status: answer.statusCode, headers });
  }
  return new Response(Readable.toWeb(answer.body) as ReadableStream<Uint8Array>, {
    status: answer.statusCode,
    headers,
  });
}
