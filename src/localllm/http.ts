/** The local LLM server's plain HTTP helpers: JSON answers and bounded request bodies. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './protocol.js';

const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Answers with a JSON body, unless an answer already went out or the client is gone. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The request body as text; a body over 8 MiB is refused with 413 and its connection dropped. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, `request body exceeds ${MAX_BODY_BYTES} bytes`, null, 'request_too_large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
