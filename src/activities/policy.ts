import { parsePolicyOutput } from '../core/think.js';
import type { PolicyTurnInput } from '../core/dialogueTurn.js';
import type { PolicyTurnResult } from '../core/transcript.js';
import { chatCompletion } from './chatCompletion.js';
import { withVersionReload } from '../vllm/republish.js';

/** One policy turn: a chat completion, then the think-then-say split. A malformed output is a result, not an error. */
export async function generatePolicyTurn(input: PolicyTurnInput): Promise<PolicyTurnResult> {
  // A version a restarted vLLM lost is published again from the trainer's checkpoint, then asked again.
  const response = await withVersionReload(input.endpoint, () =>
    chatCompletion({
      endpoint: input.endpoint,
      role: 'policy',
      messages: input.messages,
      seed: input.seed,
    }),
  );
  const parsed = parsePolicyOutput(response.content, input.think);
  return {
    raw: response.content,
    reply: parsed.reply,
    thinking: parsed.thinking,
    malformed: parsed.malformed,
    ...(parsed.problem !== undefined ? { problem: parsed.problem } : {}),
    model: response.model,
    latencyMs: response.latencyMs,
    usage: response.usage,
    ...(response.sampled
      ? { tokens: 'sampled' as const, tokenIds: response.sampled.tokenIds, logprobs: response.sampled.logprobs }
      : { tokens: 'retokenized' as const }),
  };
}
