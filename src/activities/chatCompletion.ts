import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { EndpointCall } from '../core/rolloutSettingsSchema.js';
import { sampledTokensOf, type SampledTokens } from '../core/sampledTokens.js';
import type { ChatMessage, TokenUsage } from '../core/transcript.js';
import { recordLlmCall } from './attuneMetrics.js';
import { withTokenBudget } from './tokenRateLimits.js';
import { fetchAfterCheck } from '../http/beforeRequest.js';

export interface ChatRequest {
  endpoint: EndpointCall;
  /** `policy` or `simulator`: named in every error so an operator knows which endpoint failed. */
  role: string;
  messages: ChatMessage[];
  seed?: number;
  responseFormat?: OpenAI.Chat.Completions.ChatCompletionCreateParams['response_format'];
  /** Replaces the endpoint's maxTokens for this call. */
  maxTokens?: number;
}

export interface ChatResponse {
  content: string;
  usage: TokenUsage;
  latencyMs: number;
  model: string;
  /** With `endpoint.logprobs`: the sampled ids and log-probs, or null when the endpoint refused or ignored them. */
  sampled?: SampledTokens | null;
}

const clients = new Map<string, OpenAI>();

/** One client per endpoint and key; the key is read here, in the activity, from the named variable. */
function clientFor(endpoint: EndpointCall): OpenAI {
  const apiKey = process.env[endpoint.apiKeyEnv] ?? '';
  const cacheKey = `${endpoint.baseURL}\u0000${endpoint.apiKeyEnv}\u0000${apiKey.length}\u0000${endpoint.timeoutMs}`;
  let client = clients.get(cacheKey);
  if (!client) {
    client = new OpenAI({
      baseURL: endpoint.baseURL,
      // Local servers need no key; the client library insists on a non-empty string.
      apiKey: apiKey === '' ? 'not-needed' : apiKey,
      timeout: endpoint.timeoutMs,
      // Temporal owns retries, with backoff and visibility in the UI.
      maxRetries: 0,
      // A local turn's fence check runs here, as late as possible before the request leaves; then
      // the request goes without undici's 300 s limit on the answer's headers, so `timeout` alone decides.
      fetch: fetchAfterCheck,
    });
    clients.set(cacheKey, client);
  }
  return client;
}

/** Statuses that mean "this request will never work as sent": fail fast instead of retrying. */
const PERMANENT_STATUSES = new Set([400, 401, 403, 404, 405, 413, 415, 422]);

function describe(request: ChatRequest): string {
  return `${request.role} endpoint ${request.endpoint.baseURL} (model "${request.endpoint.model}")`;
}

export function classifyLlmError(request: ChatRequest, error: unknown): Error {
  const where = describe(request);
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return ApplicationFailure.retryable(`${where}: timed out after ${request.endpoint.timeoutMs} ms`, 'LlmTimeout');
  }
  if (error instanceof OpenAI.APIConnectionError) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return ApplicationFailure.retryable(`${where}: unreachable${cause}`, 'LlmUnreachable');
  }
  if (error instanceof OpenAI.APIError) {
    const status = error.status;
    const detail = error.message.replace(/\s+/g, ' ').slice(0, 500);
    if (status !== undefined && PERMANENT_STATUSES.has(status)) {
      const hint =
        status === 401 || status === 403
          ? ` (check ${request.endpoint.apiKeyEnv})`
          : status === 404
            ? ' (check the model name and base URL)'
            : '';
      return ApplicationFailure.nonRetryable(`${where}: HTTP ${status}${hint}: ${detail}`, 'LlmRequestRejected');
    }
    return ApplicationFailure.retryable(
      `${where}: HTTP ${status ?? '?'}: ${detail}`,
      status === 429 ? 'LlmRateLimited' : 'LlmServerError',
    );
  }
  return error instanceof Error ? error : new Error(String(error));
}

const responseSchema = {
  check(value: unknown): value is OpenAI.Chat.Completions.ChatCompletion {
    if (!value || typeof value !== 'object') return false;
    const choices = (value as { choices?: unknown }).choices;
    return Array.isArray(choices);
  },
};

/** vLLM's way to get the sampled ids back: each logprobs token written `token_id:N` (the trainer follows it). */
const LOGPROBS_PARAMS = { logprobs: true, return_tokens_as_token_ids: true };

/** An endpoint that refuses the logprobs parameters answers this; the call is made again without them. */
function refusedLogprobs(error: unknown): boolean {
  return error instanceof OpenAI.APIError && (error.status === 400 || error.status === 422);
}

/** One OpenAI-compatible chat completion; the same code serves vLLM, SGLang, OpenAI, DeepSeek and local servers. */
export async function chatCompletion(request: ChatRequest): Promise<ChatResponse> {
  if (!request.endpoint.logprobs) return await completionCall(request, false);
  try {
    return await completionCall(request, true);
  } catch (error) {
    if (!refusedLogprobs(error)) throw classifyLlmError(request, error);
    // Re-tokenising is the fallback; the sample is marked so and counted in the step's metrics.
    return await completionCall(request, false);
  }
}

async function completionCall(request: ChatRequest, withLogprobs: boolean): Promise<ChatResponse> {
  try {
    const response = await answeredCall(request, withLogprobs);
    recordLlmCall({
      endpoint: request.role,
      status: 'ok',
      latencyMs: response.latencyMs,
      promptTokens: response.usage.prompt,
      completionTokens: response.usage.completion,
      rateLimitWaitMs: response.usage.rateLimitWaitMs ?? 0,
    });
    return response;
  } catch (error) {
    recordLlmCall({ endpoint: request.role, status: failureStatus(error) });
    throw error;
  }
}

/** The metric's status for a failed call: the failure's type, as the workflow sees it. */
function failureStatus(error: unknown): string {
  if (error instanceof ApplicationFailure && error.type) return error.type;
  if (refusedLogprobs(error)) return 'LogprobsRefused';
  return 'error';
}

async function answeredCall(request: ChatRequest, withLogprobs: boolean): Promise<ChatResponse> {
  const { endpoint } = request;
  const maxTokens = request.maxTokens ?? endpoint.maxTokens;
  const started = Date.now();
  let completion: OpenAI.Chat.Completions.ChatCompletion;
  let rateLimitWaitMs = 0;
  try {
    const budgeted = await withTokenBudget(
      request.role,
      { messages: request.messages, maxTokens },
      () =>
        clientFor(endpoint).chat.completions.create({
          model: endpoint.model,
          messages: request.messages,
          temperature: endpoint.temperature,
          ...(endpoint.topP !== undefined ? { top_p: endpoint.topP } : {}),
          max_tokens: maxTokens,
          ...(request.seed !== undefined ? { seed: request.seed } : {}),
          ...(request.responseFormat ? { response_format: request.responseFormat } : {}),
          ...(withLogprobs ? LOGPROBS_PARAMS : {}),
        }),
      (done) => (done?.usage ? (done.usage.prompt_tokens ?? 0) + (done.usage.completion_tokens ?? 0) : null),
    );
    completion = budgeted.result;
    rateLimitWaitMs = budgeted.waitMs;
  } catch (error) {
    // the caller tells a refusal of the logprobs parameters from other failures
    throw withLogprobs && refusedLogprobs(error) ? error : classifyLlmError(request, error);
  }
  if (!responseSchema.check(completion)) {
    throw ApplicationFailure.retryable(
      `${describe(request)}: response is not a chat completion: ${JSON.stringify(completion).slice(0, 300)}`,
      'LlmBadResponse',
    );
  }
  const content = completion.choices[0]?.message?.content;
  if (typeof content !== 'string') {
    throw ApplicationFailure.retryable(
      `${describe(request)}: response has no message content: ${JSON.stringify(completion.choices[0] ?? null).slice(0, 300)}`,
      'LlmBadResponse',
    );
  }
  return {
    content,
    usage: {
      prompt: completion.usage?.prompt_tokens ?? 0,
      completion: completion.usage?.completion_tokens ?? 0,
      ...(rateLimitWaitMs > 0 ? { rateLimitWaitMs } : {}),
    },
    latencyMs: Date.now() - started - rateLimitWaitMs,
    model: completion.model ?? endpoint.model,
    ...(endpoint.logprobs ? { sampled: withLogprobs ? sampledTokensOf(completion.choices[0]) : null } : {}),
  };
}
