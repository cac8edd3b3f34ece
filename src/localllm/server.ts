/**
 * A local OpenAI-compatible chat completions server on node-llama-cpp, so the offline demo's
 * simulator is a real model behind the same `openai` client code that talks to vLLM or OpenAI.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, type Logger } from '../log.js';
import { bearerCheck, InsecureBindError, isLoopbackHost } from './access.js';
import { isAbortError, LocalLlmEngine, type GenerationMessage } from './engine.js';
import type { OutputConstraint } from './grammar.js';
import { UnsupportedSchemaError } from './jsonSchema.js';
import {
  contentText,
  HttpError,
  parseChatCompletionRequest,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
} from './protocol.js';

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

const MAX_BODY_BYTES = 8 * 1024 * 1024;
export const DEFAULT_MAX_QUEUED = 64;
export const DEFAULT_REQUEST_TIMEOUT_MS = 10 * 60_000;
/** What a 429 asks the client to wait: a local generation slot frees up within seconds. */
const RETRY_AFTER_SECONDS = 1;

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
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

function constraintOf(request: ChatCompletionRequest): OutputConstraint {
  const format = request.response_format;
  if (!format || format.type === 'text') return { kind: 'text' };
  if (format.type === 'json_object') return { kind: 'json_object' };
  return { kind: 'json_schema', schema: format.json_schema.schema, strict: format.json_schema.strict === true };
}

function messagesOf(request: ChatCompletionRequest): GenerationMessage[] {
  return request.messages.map((m) => ({
    role: m.role === 'developer' ? 'system' : m.role,
    content: contentText(m.content),
  }));
}

// eslint-disable-next-line max-lines-per-function -- still to split
export async function startLocalLlmServer(opts: LocalLlmServerOptions): Promise<LocalLlmServer> {
  const host = opts.host ?? '127.0.0.1';
  // Checked before the model loads, so a refusal costs nothing.
  if (!isLoopbackHost(host) && (opts.token ?? '') === '') throw new InsecureBindError(host);
  const maxQueued = opts.maxQueued ?? DEFAULT_MAX_QUEUED;
  const requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isInteger(maxQueued) || maxQueued < 0)
    throw new Error(`maxQueued must be a non-negative integer, got ${maxQueued}`);
  if (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs < 1)
    throw new Error(`requestTimeoutMs must be a positive integer, got ${requestTimeoutMs}`);
  const authorized = bearerCheck(opts.token);
  const logger = opts.logger ?? createLogger({ component: 'localllm' });
  const engine = await LocalLlmEngine.load({
    modelPath: opts.modelPath,
    logger,
    ...(opts.contextSize !== undefined ? { contextSize: opts.contextSize } : {}),
    ...(opts.parallel !== undefined ? { parallel: opts.parallel } : {}),
    ...(opts.threads !== undefined ? { threads: opts.threads } : {}),
  });
  const modelName = opts.modelName ?? engine.modelName;
  logger.info('model loaded', {
    modelPath: opts.modelPath,
    chatTemplate: engine.chatTemplate,
    contextSize: engine.contextSize,
    parallel: engine.parallel,
    threads: engine.threads,
    ...engine.loadTimings,
  });
  const startedAt = Math.floor(Date.now() / 1000);
  /** Every in-flight request's abort, so close() can stop generation instead of waiting it out. */
  const inFlight = new Set<AbortController>();
  const handlers = new Set<Promise<void>>();
  /** Dropped schema keywords are logged once per distinct message, not on every request reusing the grammar. */
  const warned = new Set<string>();
  /** Requests generating or waiting for a sequence; beyond parallel + maxQueued a request is turned away. */
  let admitted = 0;

  // eslint-disable-next-line max-lines-per-function -- still to split
  async function chatCompletions(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      throw new HttpError(
        400,
        'We could not parse the JSON body of your request. The body must be a JSON object.',
        null,
        'invalid_json',
      );
    }
    const request = parseChatCompletionRequest(body, engine.contextSize);
    if (admitted >= engine.parallel + maxQueued) {
      throw new HttpError(
        429,
        `The local model server is busy: ${engine.parallel} requests generating and ${maxQueued} waiting. Retry after ${RETRY_AFTER_SECONDS} s.`,
        null,
        'rate_limit_exceeded',
        'requests',
      );
    }
    admitted++;
    const abort = new AbortController();
    inFlight.add(abort);
    // 'close' before the response finished means the client went away: stop spending CPU on it.
    const onClose = () => {
      if (!res.writableFinished) abort.abort();
    };
    res.on('close', onClose);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, requestTimeoutMs);
    const started = performance.now();
    try {
      const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? undefined;
      const result = await generateOrTimeout(
        {
          messages: messagesOf(request),
          temperature: request.temperature ?? 1,
          topP: request.top_p ?? 1,
          topK: Math.max(0, request.top_k ?? 0),
          minP: request.min_p ?? 0,
          maxTokens,
          seed: request.seed ?? undefined,
          stop: (typeof request.stop === 'string' ? [request.stop] : (request.stop ?? [])).filter((s) => s !== ''),
          presencePenalty: request.presence_penalty ?? 0,
          frequencyPenalty: request.frequency_penalty ?? 0,
          constraint: constraintOf(request),
          n: request.n ?? 1,
        },
        abort.signal,
        () => timedOut,
      );
      for (const warning of result.warnings) {
        if (warned.has(warning)) continue;
        warned.add(warning);
        logger.warn('schema keyword not enforced (strict is off)', { detail: warning });
      }
      const completionTokens = result.choices.reduce((sum, c) => sum + c.completionTokens, 0);
      const response: ChatCompletionResponse = {
        id: `chatcmpl-${randomBytes(12).toString('hex')}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        system_fingerprint: null,
        choices: result.choices.map((choice, index) => ({
          index,
          message: { role: 'assistant', content: choice.content, refusal: null },
          logprobs: null,
          finish_reason: choice.finishReason,
        })),
        usage: {
          prompt_tokens: result.promptTokens,
          completion_tokens: completionTokens,
          total_tokens: result.promptTokens + completionTokens,
        },
      };
      const ms = performance.now() - started;
      logger.debug('completion', {
        promptTokens: result.promptTokens,
        completionTokens,
        ms: Math.round(ms),
        finish: result.choices.map((c) => c.finishReason),
        format: request.response_format?.type ?? 'text',
      });
      sendJson(res, 200, response);
    } finally {
      clearTimeout(timer);
      res.off('close', onClose);
      inFlight.delete(abort);
      admitted--;
    }
  }

  /** engine.generate, with an abort caused by the request timeout turned into a 504 the client can read. */
  async function generateOrTimeout(
    request: Parameters<LocalLlmEngine['generate']>[0],
    signal: AbortSignal,
    timedOut: () => boolean,
  ): ReturnType<LocalLlmEngine['generate']> {
    try {
      return await engine.generate(request, signal);
    } catch (error) {
      if (isAbortError(error) && timedOut())
        throw new HttpError(
          504,
          `The request timed out: not finished within the local model server's request timeout of ${requestTimeoutMs} ms ` +
            '(queue wait and generation); ask for fewer tokens or raise the timeout.',
          null,
          'request_timeout',
        );
      throw error;
    }
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    const isAuthorized = authorized(req);
    if (path === '/health' || path === '/v1/health') {
      if (method !== 'GET')
        throw new HttpError(405, `Method ${method} not allowed on ${path}`, null, 'method_not_allowed');
      // Liveness for anyone; the model and the load only for a caller holding the token.
      if (!isAuthorized) {
        sendJson(res, 200, { status: 'ok' });
        return;
      }
      sendJson(res, 200, {
        status: 'ok',
        model: modelName,
        parallel: engine.parallel,
        threads: engine.threads,
        contextSize: engine.contextSize,
        ...engine.stats(),
      });
      return;
    }
    if (!isAuthorized) {
      throw new HttpError(
        401,
        'Missing or invalid bearer token: send Authorization: Bearer <the local model server token>.',
        null,
        'invalid_api_key',
        'authentication_error',
      );
    }
    if (path === '/v1/models') {
      if (method !== 'GET')
        throw new HttpError(405, `Method ${method} not allowed on ${path}`, null, 'method_not_allowed');
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: modelName, object: 'model', created: startedAt, owned_by: 'attune-localllm' }],
      });
      return;
    }
    if (path.startsWith('/v1/models/') && method === 'GET') {
      // Single-model server: any name resolves to the loaded model, echoed back.
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      sendJson(res, 200, { id, object: 'model', created: startedAt, owned_by: 'attune-localllm' });
      return;
    }
    if (path === '/v1/chat/completions') {
      if (method !== 'POST')
        throw new HttpError(405, `Method ${method} not allowed on ${path}; use POST`, null, 'method_not_allowed');
      await chatCompletions(req, res);
      return;
    }
    throw new HttpError(404, `Unknown request URL: ${method} ${path}`, null, 'unknown_url');
  }

  const server = createServer((req, res) => {
    const handled = route(req, res).catch((error: unknown) => {
      if (isAbortError(error)) {
        logger.debug('request abandoned by its client', { url: req.url });
        return;
      }
      if (error instanceof UnsupportedSchemaError) {
        sendJson(res, 400, new HttpError(400, error.message, 'response_format', 'unsupported_schema').toBody());
        return;
      }
      if (error instanceof HttpError) {
        const headers: Record<string, string> =
          error.status === 429 ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {};
        if (error.status === 401) headers['www-authenticate'] = 'Bearer';
        sendJson(res, error.status, error.toBody(), headers);
        return;
      }
      logger.error('request failed', {
        url: req.url,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
      sendJson(
        res,
        500,
        new HttpError(500, `internal error: ${error instanceof Error ? error.message : String(error)}`).toBody(),
      );
    });
    handlers.add(handled);
    void handled.finally(() => handlers.delete(handled));
  });
  // Generation can outlast Node's default 5-minute request timeout on slow CPUs; clients set their own.
  server.requestTimeout = 0;

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await engine.dispose();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const url = `http://${urlHost}:${port}/v1`;

  let closing: Promise<void> | null = null;
  return {
    url,
    modelName,
    loadMs: engine.loadTimings.totalMs,
    contextSize: engine.contextSize,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const abort of inFlight) abort.abort();
        server.closeAllConnections();
        await stopped;
        await Promise.allSettled([...handlers]);
        await engine.dispose();
      })();
      return closing;
    },
  };
}
