import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetchInOneWrite } from '../../src/http/fetchInOneWrite.js';
import { ownDeadlineDispatcher } from '../../src/http/ownDeadlines.js';

/** What the server saw of one request. */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('fetchInOneWrite: fetch as the OpenAI client uses it, the request written in one step (src/http/fetchInOneWrite.ts)', () => {
  let server: Server;
  let base = '';
  let seen: Seen[] = [];
  let answer: (res: import('node:http').ServerResponse) => void = (res) => res.end();
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        answer(res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => (seen = []));

  const call = (path: string, init?: RequestInit) => fetchInOneWrite(ownDeadlineDispatcher, `${base}${path}`, init);

  it('sends the method, path with query, headers and body as given, with the body’s length', async () => {
    answer = (res) => res.writeHead(201, { 'x-request-id': 'r1', 'content-type': 'application/json' }).end('{"a":1}');
    const response = await call('/v1/chat/completions?x=1', {
      method: 'post',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'héllo' }),
    });
    assert.equal(response.status, 201);
    assert.equal(response.headers.get('x-request-id'), 'r1');
    assert.deepEqual(await response.json(), { a: 1 });
    const [request] = seen;
    assert.equal(request!.method, 'POST');
    assert.equal(request!.url, '/v1/chat/completions?x=1');
    assert.equal(request!.headers.authorization, 'Bearer k');
    assert.equal(request!.body, '{"text":"héllo"}');
    assert.equal(request!.headers['content-length'], String(Buffer.byteLength('{"text":"héllo"}')));
  });

  it('takes the content type from a body that has one (a URL-encoded form), and sends no body with a GET', async () => {
    answer = (res) => res.end('ok');
    const form = new URLSearchParams({ a: 'b' });
    await call('/form', { method: 'POST', body: form });
    assert.match(String(seen[0]!.headers['content-type']), /^application\/x-www-form-urlencoded/);
    assert.equal(seen[0]!.body, 'a=b');
    assert.equal(await (await call('/get')).text(), 'ok');
    assert.equal(seen[1]!.method, 'GET');
    assert.equal(seen[1]!.body, '');
  });

  it('streams an answer’s body as it comes (an event stream), and gives a 204 no body', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      setImmediate(() => res.end('data: [DONE]\n\n'));
    };
    const response = await call('/stream', { method: 'POST', body: '{}' });
    assert.equal(await response.text(), 'data: 1\n\ndata: [DONE]\n\n');
    answer = (res) => res.writeHead(204).end();
    const empty = await call('/empty', { method: 'DELETE' });
    assert.equal(empty.status, 204);
    assert.equal(empty.body, null);
  });

  it('follows redirects as fetch does: a 307 keeps method and body, another origin gets no Authorization, a 303 goes on as a GET; manual returns the 3xx', async () => {
    const other = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: `other${req.url ?? ''}`, headers: req.headers, body });
        res.end('there');
      });
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const elsewhere = `http://127.0.0.1:${(other.address() as AddressInfo).port}`; // another port: another origin
    try {
      answer = (res) => {
        const last = seen.at(-1)!;
        if (last.url === '/307') res.writeHead(307, { location: '/v1/moved' }).end();
        else if (last.url === '/away') res.writeHead(308, { location: `${elsewhere}/v1/away` }).end();
        else if (last.url === '/303') res.writeHead(303, { location: '/see' }).end();
        else res.end(`here ${last.method} ${last.body}`);
      };
      const post = { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{"a":1}' };
      assert.equal(await (await call('/307', post)).text(), 'here POST {"a":1}');
      assert.equal(seen[1]!.headers.authorization, 'Bearer k', 'same origin: the key goes on');
      assert.equal(await (await call('/away', post)).text(), 'there');
      assert.deepEqual([seen[3]!.url, seen[3]!.method, seen[3]!.body], ['other/v1/away', 'POST', '{"a":1}']);
      assert.equal(seen[3]!.headers.authorization, undefined, 'another origin: no key');
      assert.equal(await (await call('/303', post)).text(), 'here GET ');
      const manual = await call('/307', { ...post, redirect: 'manual' });
      assert.deepEqual([manual.status, manual.headers.get('location')], [307, '/v1/moved']);
      await assert.rejects(call('/307', { ...post, redirect: 'error' }), TypeError);
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('fails as fetch does: a refused connection is a TypeError "fetch failed" with its cause, an abort is the signal’s reason', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await assert.rejects(
      fetchInOneWrite(ownDeadlineDispatcher, `http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' }),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message === 'fetch failed' &&
        (error.cause as { code?: string }).code === 'ECONNREFUSED',
    );
    answer = () => {}; // never answers
    const controller = new AbortController();
    const pending = call('/slow', { method: 'POST', body: '{}', signal: controller.signal });
    const reason = new DOMException('stopped by the caller', 'AbortError');
    setImmediate(() => controller.abort(reason));
    await assert.rejects(pending, (error: unknown) => error === reason);
    const aborted = AbortSignal.abort();
    await assert.rejects(call('/x', { signal: aborted }), (error: unknown) => error === aborted.reason);
  });
});
