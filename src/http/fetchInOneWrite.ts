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
 * What it does not do, being for API calls: follow redirects (a 3xx is returned as it came), decode
 * compressed answers (it asks for none), or set `response.url`. Failures take fetch's shapes: a
 * network error is a TypeError "fetch failed" with the cause, an abort is the signal's reason.
 */
export async function fetchInOneWrite(
  dispatcher: Dispatcher,
  input: string | URL | Request,
  init: RequestInit = {},
): Promise<Response> {
  const request = input instanceof Request ? input : null;
  const url = new URL(request ? request.url : String(input));
  const headers = new Headers(request?.headers);
  for (const [name, value] of new Headers(init.headers)) headers.set(name, value);
  const signal = init.signal ?? request?.signal ?? undefined;
  const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
  // Encoded as fetch would: a string as UTF-8, form data with its boundary in the content type.
  const encoded =
    init.body != null ? new Response(init.body) : request?.body ? new Response(await request.arrayBuffer()) : null;
  const body = encoded ? Buffer.from(await encoded.arrayBuffer()) : null;
  const contentType = encoded?.headers.get('content-type');
  if (contentType && !headers.has('content-type')) headers.set('content-type', contentType);
  signal?.throwIfAborted();
  let answer: Dispatcher.ResponseData;
  try {
    answer = await dispatcher.request({
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
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(answer.headers))
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
      responseHeaders.append(name, one);
  // Statuses that carry no body: a Response refuses one.
  if ([101, 204, 205, 304].includes(answer.statusCode)) {
    answer.body.resume();
    return new Response(null, { status: answer.statusCode, headers: responseHeaders });
  }
  return new Response(Readable.toWeb(answer.body) as ReadableStream<Uint8Array>, {
    status: answer.statusCode,
    headers: responseHeaders,
  });
}
