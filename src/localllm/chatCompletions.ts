/**
 * The local LLM server's /v1/chat/completions: a request parsed and admitted (or turned away when the
 * queue is full), generated under an abort for a gone client or the request timeout, and answered as OpenAI does.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log.js';
import {
  isAbortError,
  type GenerationMessage,
  type GenerationRequest,
  type GenerationResult,
  type LocalLlmEngine,
} from './engine.js';
import type { OutputConstraint } from './grammar.js';
import { readBody, sendJson } from './http.js';
import {
  contentText,
  HttpError,
  parseChatCompletionRequest,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
} from './protocol.js';

/** What a 429 asks the client to wait: a local generation slot frees up within seconds. */
export const RETRY_AFTER_SECONDS = 1;

/** The request body, as JSON, then as a chat completions request the engine can serve. */
export async function parseChatRequest(req: IncomingMessage, contextSize: number): Promise<ChatCompletionRequest> {
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
  return parseChatCompletionRequest(body, contextSize);
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

/** The engine's request: OpenAI's sampling fields with OpenAI's defaults, empty stop strings dropped. */
export function generationRequestOf(request: ChatCompletionRequest): GenerationRequest {
  return {
    messages: messagesOf(request),
    temperature: request.temperature ?? 1,
    topP: request.top_p ?? 1,
    topK: Math.max(0, request.top_k ?? 0),
    minP: request.min_p ?? 0,
    maxTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
    seed: request.seed ?? undefined,
    stop: (typeof request.stop === 'string' ? [request.stop] : (request.stop ?? [])).filter((s) => s !== ''),
    presencePenalty: request.presence_penalty ?? 0,
    frequencyPenalty: request.frequency_penalty ?? 0,
    constraint: constraintOf(request),
    n: request.n ?? 1,
  };
}

/** The OpenAI chat.completion object of a generation, echoing the model name the request gave. */
export function completionResponse(request: ChatCompletionRequest, result: GenerationResult): ChatCompletionResponse {
  const completionTokens = result.choices.reduce((sum, c) => sum + c.completionTokens, 0);
  return {
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
}

/** One request's abort: fired when its client goes away before the answer, or when its time is up. */
interface RequestAbort {
  signal: AbortSignal;
  abort(): void;
  timedOut(): boolean;
  /** Stops watching: the timer and the close listener. */
  release(): void;
}

function watchRequest(res: ServerResponse, timeoutMs: number): RequestAbort {
  const controller = new AbortController();
  // 'close' before the response finished means the client went away: stop spending CPU on it.
  const onClose = () => {
    if (!res.writableFinished) controller.abort();
  };
  res.on('close', onClose);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  return {
    signal: controller.signal,
    abort: () => controller.abort(),
    timedOut: () => timedOut,
    release() {
      clearTimeout(timer);
      res.off('close', onClose);
    },
  };
}

export interface ChatCompletionsOptions {
  engine: LocalLlmEngine;
  logger: Logger;
  /** Requests waiting beyond the engine's parallel sequences; more are answered 429. */
  maxQueued: number;
  /** A request still queued or generating after this long is aborted and answered 504. */
  requestTimeoutMs: number;
}

/** Serves chat completions, keeping count of the requests admitted and the aborts of those in flight. */
export class ChatCompletions {
  /** Every in-flight request's abort, so closing the server can stop generation instead of waiting it out. */
  private readonly inFlight = new Set<RequestAbort>();
  /** Dropped schema keywords are logged once per distinct message, not on every request reusing the grammar. */
  private readonly warned = new Set<string>();
  /** Requests generating or waiting for a sequence; beyond parallel + maxQueued a request is turned away. */
  private admitted = 0;

  constructor(private readonly options: ChatCompletionsOptions) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { engine, logger } = this.options;
    const request = await parseChatRequest(req, engine.contextSize);
    this.admit();
    const watch = watchRequest(res, this.options.requestTimeoutMs);
    this.inFlight.add(watch);
    const started = performance.now();
    try {
      const result = await this.generateOrTimeout(generationRequestOf(request), watch);
      this.warnOnce(result.warnings);
      const response = completionResponse(request, result);
      logger.debug('completion', {
        promptTokens: result.promptTokens,
        completionTokens: response.usage.completion_tokens,
        ms: Math.round(performance.now() - started),
        finish: result.choices.map((c) => c.finishReason),
        format: request.response_format?.type ?? 'text',
      });
      sendJson(res, 200, response);
    } finally {
      watch.release();
      this.inFlight.delete(watch);
      this.admitted--;
    }
  }

  /** Aborts every request in flight. */
  abortAll(): void {
    for (const watch of this.inFlight) watch.abort();
  }

  /** Counts the request in, or turns it away with a 429 when parallel + maxQueued are taken. */
  private admit(): void {
    const { engine, maxQueued } = this.options;
    if (this.admitted >= engine.parallel + maxQueued) {
      throw new HttpError(
        429,
        `The local model server is busy: ${engine.parallel} requests generating and ${maxQueued} waiting. Retry after ${RETRY_AFTER_SECONDS} s.`,
        null,
        'rate_limit_exceeded',
        'requests',
      );
    }
    this.admitted++;
  }

  private warnOnce(warnings: readonly string[]): void {
    for (const warning of warnings) {
      if (this.warned.has(warning)) continue;
      this.warned.add(warning);
      this.options.logger.warn('schema keyword not enforced (strict is off)', { detail: warning });
    }
  }

  /** engine.generate, with an abort caused by the request timeout turned into a 504 the client can read. */
  private async generateOrTimeout(request: GenerationRequest, watch: RequestAbort): Promise<GenerationResult> {
    try {
      return await this.options.engine.generate(request, watch.signal);
    } catch (error) {
      if (isAbortError(error) && watch.timedOut())
        throw new HttpError(
          504,
          `The request timed out: not finished within the local model server's request timeout of ${this.options.requestTimeoutMs} ms ` +
            '(queue wait and generation); ask for fewer tokens or raise the timeout.',
          null,
          'request_timeout',
        );
      throw error;
    }
  }
}
