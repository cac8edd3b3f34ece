/**
 * The token ids a policy endpoint sampled and their log-probabilities, read from an OpenAI-style
 * chat completion choice. The trainer then trains on exactly those tokens; re-tokenising the text
 * gives other tokens whenever a decode is lossy (byte tokens that are not valid UTF-8).
 */
export interface SampledTokens {
  tokenIds: number[];
  logprobs: number[];
}

/** vLLM's `return_tokens_as_token_ids` (and the trainer's sampler) write each token as `token_id:N`. */
const TOKEN_ID = /^token_id:(\d+)$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * The ids and log-probs of a choice, or null when the endpoint gave no ids for every token: no
 * `logprobs.content`, a token written as text rather than `token_id:N`, a log-prob that is not a
 * number, or (vLLM's `return_token_ids`) a `token_ids` list that disagrees in length.
 */
export function sampledTokensOf(choice: unknown): SampledTokens | null {
  if (!isRecord(choice)) return null;
  const content = isRecord(choice.logprobs) ? choice.logprobs.content : undefined;
  if (!Array.isArray(content) || content.length === 0) return null;
  const tokenIds: number[] = [];
  const logprobs: number[] = [];
  for (const entry of content) {
    if (!isRecord(entry) || typeof entry.token !== 'string') return null;
    const match = TOKEN_ID.exec(entry.token);
    if (!match || typeof entry.logprob !== 'number' || !Number.isFinite(entry.logprob)) return null;
    tokenIds.push(Number(match[1]));
    logprobs.push(entry.logprob);
  }
  const ids = choice.token_ids;
  if (Array.isArray(ids) && (ids.length !== tokenIds.length || ids.some((id, i) => id !== tokenIds[i]))) return null;
  return { tokenIds, logprobs };
}
