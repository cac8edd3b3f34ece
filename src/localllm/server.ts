/**
 * A local OpenAI-compatible chat completions server on node-llama-cpp, so the offline demo's
 * simulator is a real model behind the same `openai` client code that talks to vLLM or OpenAI.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, type Logger } from '../log.js';
import { bearerCheck, InsecureBindError, isLoopbackHost } from './access.js';
import { ChatCompletions, RETRY_AFTER_SECONDS } from './chatCompletions.js';
import { isAbortError, LocalLlmEngine } from './engine.js';
import { sendJson } from './http.js';
import { UnsupportedSchemaError } from './jsonSchema.js';
import { HttpError } from './protocol.js';

export interface LocalLlmServerOptions {
  modelPath: string;
  /** Defaults to 127.0.0.1: the demo needs no other host to reach it. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Reported by /v1/models; requests may name any model and get their name echoed back. */
  modelName?: string;
  /** Tokens per sequence. */
  contextSize?: number;
  /** Requests generated at once; more wait in a queue. Default 2. */
  parallel?: number;
  /** Requests waiting beyond `parallel`; more are answered 429 with Retry-After. Default 64. */
  maxQueued?: number;
  /** A request still queued or generating after this long is aborted and answered 504. Default 10 minutes. */
  requestTimeoutMs?: number;
  /**
   * Bearer token every route but /health needs. Required on a host other than loopback: without it
   * the server refuses to start (InsecureBindError).
   */
  token?: string;
  threads?: number;
  logger?: Logger;
}

export interface LocalLlmServer {
  /** Base URL for the openai client, e.g. http://127.0.0.1:PORT/v1 */
  url: string;
  /** The model as /v1/models names it. */
  modelName: string;
  /** Milliseconds spent loading the runtime, the model and the context. */
  loadMs: number;
  /** Tokens per request (per sequence). */
  contextSize: number;
  close(): Promise<void>;
}

export const DEFAULT_MAX_QUEUED = 64;
export const DEFAULT_REQUEST_TIMEOUT_MS = 10 * 60_000;

/** The queue and timeout limits, checked before the model loads so a refusal costs nothing. */
function checkedLimits(opts: LocalLlmServerOptions): { host: string; maxQueued: number; requestTimeoutMs: number } {
  const host = opts.host ?? '127.0.0.1';
  if (!isLoopbackHost(host) && (opts.token ?? '') === '') throw new InsecureBindError(host);
  const maxQueued = opts.maxQueued ?? DEFAULT_MAX_QUEUED;
  const requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isInteger(maxQueued) || maxQueued < 0)
    throw new Error(`maxQueued must be a non-negative integer, got ${maxQueued}`);
  if (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs < 1)
    throw new Error(`requestTimeoutMs must be a positive integer, got ${requestTimeoutMs}`);
  return { host, maxQueued, requestTimeoutMs };
}

async function loadEngine(opts: LocalLlmServerOptions, logger: Logger): Promise<LocalLlmEngine> {
  const engine = await LocalLlmEngine.load({
    modelPath: opts.modelPath,
    logger,
    ...(opts.contextSize !== undefined ? { contextSize: opts.contextSize } : {}),
    ...(opts.parallel !== undefined ? { parallel: opts.parallel } : {}),
    ...(opts.threads !== undefined ? { threads: opts.threads } : {}),
  });
  logger.info('model loaded', {
    modelPath: opts.modelPath,
    chatTemplate: engine.chatTemplate,
    contextSize: engine.contextSize,
    parallel: engine.parallel,
    threads: engine.threads,
    ...engine.loadTimings,
  });
  return engine;
}

/** What the routes answer from: the loaded model, the token check and the chat completions handler. */
interface Routes {
  engine: LocalLlmEngine;
  modelName: string;
  /** Seconds since the epoch when the server started: the models' `created`. */
  startedAt: number;
  authorized: (req: IncomingMessage) => boolean;
  chat: ChatCompletions;
}

function methodNotAllowed(method: string, path: string, hint = ''): HttpError {
  return new HttpError(405, `Method ${method} not allowed on ${path}${hint}`, null, 'method_not_allowed');
}

/** /health: liveness for anyone; the model and the load only for a caller holding the token. */
function health(routes: Routes, method: string, path: string, isAuthorized: boolean, res: ServerResponse): void {
  if (method !== 'GET') throw methodNotAllowed(method, path);
  if (!isAuthorized) {
    sendJson(res, 200, { status: 'ok' });
    return;
  }
  const { engine } = routes;
  sendJson(res, 200, {
    status: 'ok',
    model: routes.modelName,
    parallel: engine.parallel,
    threads: engine.threads,
    contextSize: engine.contextSize,
    ...engine.stats(),
  });
}

async function route(routes: Routes, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
  const method = req.method ?? 'GET';
  const isAuthorized = routes.authorized(req);
  if (path === '/health' || path === '/v1/health') return health(routes, method, path, isAuthorized, res);
  if (!isAuthorized) {
    throw new HttpError(
      401,
      'Missing or invalid bearer token: send Authorization: Bearer <the local model server token>.',
      null,
      'invalid_api_key',
      'authentication_error',
    );
  }
  const model = (id: string) => ({ id, object: 'model', created: routes.startedAt, owned_by: 'attune-localllm' });
  if (path === '/v1/models') {
    if (method !== 'GET') throw methodNotAllowed(method, path);
    sendJson(res, 200, { object: 'list', data: [model(routes.modelName)] });
    return;
  }
  if (path.startsWith('/v1/models/') && method === 'GET') {
    // Single-model server: any name resolves to the loaded model, echoed back.
    sendJson(res, 200, model(decodeURIComponent(path.slice('/v1/models/'.length))));
    return;
  }
  if (path === '/v1/chat/completions') {
    if (method !== 'POST') throw methodNotAllowed(method, path, '; use POST');
    await routes.chat.handle(req, res);
    return;
  }
  throw new HttpError(404, `Unknown request URL: ${method} ${path}`, null, 'unknown_url');
}

/** Answers a failed request: its HttpError as OpenAI writes errors, anything unexpected as a logged 500. */
function sendError(res: ServerResponse, url: string | undefined, error: unknown, logger: Logger): void {
  if (isAbortError(error)) {
    logger.debug('request abandoned by its client', { url });
    return;
  }
  if (error instanceof UnsupportedSchemaError) {
    sendJson(res, 400, new HttpError(400, error.message, 'response_format', 'unsupported_schema').toBody());
    return;
  }
  if (error instanceof HttpError) {
    const headers: Record<string, string> = error.status === 429 ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {};
    if (error.status === 401) headers['www-authenticate'] = 'Bearer';
    sendJson(res, error.status, error.toBody(), headers);
    return;
  }
  logger.error('request failed', {
    url,
    error: error instanceof Error ? (error.stack ?? error.message) : String(error),
  });
  sendJson(
    res,
    500,
    new HttpError(500, `internal error: ${error instanceof Error ? error.message : String(error)}`).toBody(),
  );
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The base URL clients use: IPv6 in brackets, the wildcard address as loopback. */
function baseUrl(host: string, port: number): string {
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return `http://${urlHost}:${port}/v1`;
}

export async function startLocalLlmServer(opts: LocalLlmServerOptions): Promise<LocalLlmServer> {
  const { host, maxQueued, requestTimeoutMs } = checkedLimits(opts);
  const logger = opts.logger ?? createLogger({ component: 'localllm' });
  const engine = await loadEngine(opts, logger);
  const chat = new ChatCompletions({ engine, logger, maxQueued, requestTimeoutMs });
  const routes: Routes = {
    engine,
    modelName: opts.modelName ?? engine.modelName,
    startedAt: Math.floor(Date.now() / 1000),
    authorized: bearerCheck(opts.token),
    chat,
  };
  const handlers = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    const handled = route(routes, req, res).catch((error: unknown) => sendError(res, req.url, error, logger));
    handlers.add(handled);
    void handled.finally(() => handlers.delete(handled));
  });
  // Generation can outlast Node's default 5-minute request timeout on slow CPUs; clients set their own.
  server.requestTimeout = 0;
  try {
    await listen(server, opts.port ?? 0, host);
  } catch (error) {
    await engine.dispose();
    throw error;
  }
  let closing: Promise<void> | null = null;
  return {
    url: baseUrl(host, (server.address() as AddressInfo).port),
    modelName: routes.modelName,
    loadMs: engine.loadTimings.totalMs,
    contextSize: engine.contextSize,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        chat.abortAll();
        server.closeAllConnections();
        await stopped;
        await Promise.allSettled([...handlers]);
        await engine.dispose();
      })();
      return closing;
    },
  };
}
