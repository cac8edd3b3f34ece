import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import { analysisJsonSchema, analysisProblem, parseAnalysis } from '../core/analysis.js';
import { analysisMaxCompletionTokens } from '../core/analysisTokenBudget.js';
import type { SimulatorCall } from '../core/rolloutSettingsSchema.js';
import type { SimulatorCallInput } from '../core/dialogueTurn.js';
import type { AnalysisResult, UserMessageResult } from '../core/transcript.js';
import { chatCompletion } from './chatCompletion.js';

function responseFormatFor(
  mode: SimulatorCall['structuredOutput'],
  maxChars: number | undefined,
): OpenAI.Chat.Completions.ChatCompletionCreateParams['response_format'] | undefined {
  if (mode === 'json_schema') {
    return {
      type: 'json_schema',
      json_schema: { name: 'user_analysis', strict: true, schema: analysisJsonSchema(maxChars) },
    };
  }
  if (mode === 'json_object') return { type: 'json_object' };
  return undefined;
}

/**
 * With the text fields bounded by the schema, the call gets at least the tokens a complete object
 * can take, so it is never cut off mid-object (and lost) by the endpoint's maxTokens.
 */
function analysisMaxTokens(endpoint: SimulatorCall): number | undefined {
  if (endpoint.structuredOutput !== 'json_schema' || endpoint.analysisMaxChars === undefined) return undefined;
  return Math.max(endpoint.maxTokens, analysisMaxCompletionTokens(endpoint.analysisMaxChars));
}

/**
 * SAGE's first call: the user's analysis of the assistant's reply. An unparseable answer is asked
 * again with a new seed (bounded), then the rollout fails quoting what came back.
 */
export async function analyzeAssistantReply(input: SimulatorCallInput): Promise<AnalysisResult> {
  const responseFormat = responseFormatFor(input.endpoint.structuredOutput, input.endpoint.analysisMaxChars);
  const maxTokens = analysisMaxTokens(input.endpoint);
  const usage: AnalysisResult['usage'] = { prompt: 0, completion: 0 };
  let latencyMs = 0;
  let lastRaw = '';
  const attempts = input.endpoint.parseRetries + 1;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const response = await chatCompletion({
      endpoint: input.endpoint,
      role: 'simulator',
      messages: input.messages,
      // A new seed per attempt: at temperature 0 the same seed would give back the same garbage.
      seed: input.seed + attempt,
      ...(responseFormat ? { responseFormat } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
    });
    usage.prompt += response.usage.prompt;
    usage.completion += response.usage.completion;
    if (response.usage.rateLimitWaitMs)
      usage.rateLimitWaitMs = (usage.rateLimitWaitMs ?? 0) + response.usage.rateLimitWaitMs;
    latencyMs += response.latencyMs;
    lastRaw = response.content;
    const analysis = parseAnalysis(response.content);
    if (analysis) return { analysis, raw: response.content, attempts: attempt + 1, latencyMs, usage };
  }
  throw ApplicationFailure.nonRetryable(
    `simulator endpoint ${input.endpoint.baseURL} (model "${input.endpoint.model}") returned no parseable analysis after ${attempts} attempts (${analysisProblem(lastRaw)}); last reply: ${JSON.stringify(lastRaw.slice(0, 1000))}`,
    'UnparseableSimulatorOutput',
  );
}

/**
 * The prompt shows the dialogue as JSON strings, and a model may answer in the same form: a reply
 * that is one JSON string literal is decoded, one in plain quotes loses them.
 */
function unquoteMessage(text: string): string {
  if (/^"[\s\S]*"$/.test(text)) {
    try {
      const decoded: unknown = JSON.parse(text);
      if (typeof decoded === 'string') return decoded;
    } catch {
      // Not JSON: plain quotes around the message.
    }
    return text.slice(1, -1);
  }
  return text;
}

/** SAGE's second call (and the opening line for profiles without one): plain text in the user's voice. */
export async function writeUserMessage(input: SimulatorCallInput): Promise<UserMessageResult> {
  const response = await chatCompletion({
    endpoint: input.endpoint,
    role: 'simulator',
    messages: input.messages,
    seed: input.seed,
  });
  const text = unquoteMessage(response.content.trim().replace(/^(?:user|you|你)\s*[:：]\s*/i, '')).trim();
  if (text.length === 0) {
    throw ApplicationFailure.retryable(
      `simulator endpoint ${input.endpoint.baseURL} (model "${input.endpoint.model}") returned an empty user message`,
      'EmptySimulatorOutput',
    );
  }
  return { text, latencyMs: response.latencyMs, usage: response.usage };
}
