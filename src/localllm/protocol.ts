/** The slice of the OpenAI chat completions API this server speaks: request validation and wire types. */
import { z } from 'zod';

const textPart = z.object({ type: z.literal('text'), text: z.string() });
/** Content is a string or text parts (what the openai client sends for multi-part messages). */
const content = z.union([z.string(), z.array(textPart)]);

/**
 * Bounds on one request, so a caller cannot hold the CPU or the memory with one request: far above
 * what a dialogue needs (the context size caps the prompt anyway), far below what would hurt.
 */
export const REQUEST_LIMITS = {
  messages: 256,
  /** Characters of one message's content (text parts joined). */
  messageChars: 100_000,
  stopStrings: 4,
  stopChars: 256,
  n: 16,
} as const;

const message = z
  .object({
    // `developer` is OpenAI's newer name for `system`; tool messages need tool calling, which we do not offer.
    role: z.enum(['system', 'developer', 'user', 'assistant']),
    content,
    name: z.string().max(256).optional(),
  })
  .superRefine((m, ctx) => {
    const length = contentText(m.content).length;
    if (length > REQUEST_LIMITS.messageChars)
      ctx.addIssue({
        code: 'custom',
        path: ['content'],
        message: `is ${length} characters; at most ${REQUEST_LIMITS.messageChars} are allowed`,
      });
  });

const stopString = z.string().max(REQUEST_LIMITS.stopChars);

const responseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 characters of a-z, A-Z, 0-9, _ or -'),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()),
      strict: z.boolean().nullish(),
    }),
  }),
]);

/**
 * Unknown fields are ignored (as vLLM does); fields we cannot honour are refused below rather than
 * silently dropped. `contextSize` bounds max_tokens: no completion can be longer than the context.
 */
function requestSchema(contextSize: number) {
  const maxTokens = z
    .number()
    .int()
    .positive()
    .max(contextSize, `must be at most ${contextSize}, the model's context size`)
    .nullish();
  return z.object({
    model: z.string().min(1).max(256),
    messages: z.array(message).min(1).max(REQUEST_LIMITS.messages),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    max_tokens: maxTokens,
    max_completion_tokens: maxTokens,
    seed: z.number().int().nullish(),
    stop: z.union([stopString, z.array(stopString).max(REQUEST_LIMITS.stopStrings)]).nullish(),
    n: z.number().int().min(1).max(REQUEST_LIMITS.n).nullish(),
    stream: z.boolean().nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    // vLLM's sampling extensions (sent via the openai client's extra body). top_k 0 or -1 = off.
    top_k: z.number().int().min(-1).nullish(),
    min_p: z.number().min(0).max(1).nullish(),
    response_format: responseFormat.nullish(),
    tools: z.array(z.unknown()).max(0, 'tool calling is not supported by the local server').nullish(),
    logprobs: z.literal(false, 'logprobs are not supported by the local server').nullish(),
  });
}

/** Schemas by context size: one server has one, so this holds one entry. */
const schemas = new Map<number, ReturnType<typeof requestSchema>>();

export function chatCompletionRequestSchema(contextSize: number): ReturnType<typeof requestSchema> {
  let schema = schemas.get(contextSize);
  if (!schema) {
    schema = requestSchema(contextSize);
    schemas.set(contextSize, schema);
  }
  return schema;
}
export type ChatCompletionRequest = z.infer<ReturnType<typeof requestSchema>>;
export type ChatMessageIn = z.infer<typeof message>;

export interface OpenAiError {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = status >= 500 ? 'server_error' : 'invalid_request_error',
  ) {
    super(message);
    this.name = 'HttpError';
  }

  toBody(): OpenAiError {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** `messages[0].content` style, the way a reader would point at the field. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`;
  return out;
}

/** Parse and validate; a failure becomes a 400 naming the first offending field. */
export function parseChatCompletionRequest(body: unknown, contextSize: number): ChatCompletionRequest {
  const result = chatCompletionRequestSchema(contextSize).safeParse(body);
  if (result.success) {
    if (result.data.stream === true) {
      throw new HttpError(
        400,
        'stream: true is not supported by the local server; omit "stream" or send false',
        'stream',
        'unsupported_parameter',
      );
    }
    return result.data;
  }
  const issues = result.error.issues;
  const first = issues[0];
  const param = first ? formatPath(first.path) || null : null;
  const details = issues
    .slice(0, 5)
    .map((issue) => `${formatPath(issue.path) || '(body)'}: ${issue.message}`)
    .join('; ');
  // OpenAI's code for a completion longer than the model can hold.
  const tooLong = first?.code === 'too_big' && (param === 'max_tokens' || param === 'max_completion_tokens');
  throw new HttpError(400, `Invalid request: ${details}`, param, tooLong ? 'context_length_exceeded' : 'invalid_value');
}

/** Text of a message's content, text parts joined as the OpenAI API does. */
export function contentText(value: ChatMessageIn['content']): string {
  return typeof value === 'string' ? value : value.map((part) => part.text).join('');
}

export interface ChatCompletionResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint: string | null;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string; refusal: null };
    logprobs: null;
    finish_reason: 'stop' | 'length';
  }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}
