import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PayloadCodec } from '@temporalio/common';
import type { Logger } from '../log.js';
import { payloadFromJson, payloadsBodySchema, payloadToJson } from './payloadJson.js';

/** The embedded dev server's web UI, the one origin a local codec server serves by default. */
export const LOCAL_UI_ORIGINS = ['http://127.0.0.1:8233', 'http://localhost:8233'];
export const CODEC_SERVER_DEFAULT_PORT = 8403;
export const CODEC_SERVER_TOKEN_ENV = 'ATTUNE_CODEC_SERVER_TOKEN';

/** A page of history can hold many payloads of up to 2 MB each. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface CodecServerOptions {
  codec: PayloadCodec;
  host: string;
  port: number;
  /** Browser origins allowed to call (the Temporal UI's). */
  corsOrigins: string[];
  /** When set, every /encode and /decode request must carry `Authorization: Bearer <token>`. */
  token?: string;
  log: Logger;
}

export interface RunningCodecServer {
  url: string;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function readBody(req: IncomingMessage, where: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `${where}: the body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The payloads of a request's `{"payloads": [...]}` body; a 400 when it is not JSON or not that shape. */
async function payloadsOf(req: IncomingMessage, where: string) {
  let json: unknown;
  try {
    json = JSON.parse(await readBody(req, where));
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, `${where}: the body is not JSON: ${(error as Error).message}`);
  }
  const body = payloadsBodySchema.safeParse(json);
  if (!body.success) {
    const issue = body.error.issues[0];
    throw new HttpError(
      400,
      `${where}: expected {"payloads": [{"metadata": {...}, "data": "<base64>"}]}: ${issue?.path.join('.') || 'body'}: ${issue?.message}`,
    );
  }
  return body.data.payloads.map(payloadFromJson);
}

/**
 * The Temporal codec server protocol: `POST …/encode` and `POST …/decode` (only the last path
 * segment counts, so the endpoints can sit under any prefix, e.g. a namespace) with a proto3-JSON
 * `{"payloads": [...]}` body, answered in the same form; a bad body or a payload that does not
 * decode is a 400. Browsers are served only from the allowed origins (CORS, preflight included).
 */
export async function startCodecServer(options: CodecServerOptions): Promise<RunningCodecServer> {
  const { codec, log } = options;
  const allowed = new Set(options.corsOrigins);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    if (origin !== undefined && allowed.has(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
    }
    res.setHeader('Vary', 'Origin');
    // A browser sends Origin with every cross-origin POST; a page of another origin gets nothing.
    if (origin !== undefined && !allowed.has(origin)) {
      throw new HttpError(403, `origin ${origin} is not allowed (allowed: ${[...allowed].join(', ') || 'none'})`);
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': 'Content-Type, X-Namespace, Authorization',
        'Access-Control-Max-Age': '600',
      });
      res.end();
      return;
    }
    const path = new URL(req.url ?? '/', 'http://codec').pathname;
    const endpoint = path.split('/').filter(Boolean).pop();
    if (endpoint !== 'encode' && endpoint !== 'decode') {
      throw new HttpError(404, `${path}: no such endpoint (POST …/encode or …/decode)`);
    }
    const where = `POST /${endpoint}`;
    if (req.method !== 'POST') throw new HttpError(405, `${req.method} /${endpoint}: only POST is served`);
    if (options.token !== undefined && !sameSecret(req.headers.authorization ?? '', `Bearer ${options.token}`)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="attune codec server"');
      throw new HttpError(401, `${where}: missing or wrong Authorization (Bearer token of ${CODEC_SERVER_TOKEN_ENV})`);
    }
    const payloads = await payloadsOf(req, where);
    let result;
    try {
      result = endpoint === 'decode' ? await codec.decode(payloads) : await codec.encode(payloads);
    } catch (error) {
      throw new HttpError(400, `${where}: ${(error as Error).message}`);
    }
    log.debug('codec request', { endpoint, payloads: payloads.length, namespace: req.headers['x-namespace'] });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ payloads: result.map(payloadToJson) }));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof HttpError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      log.warn('codec request failed', { status, error: message });
      if (!res.headersSent) res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: message }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
