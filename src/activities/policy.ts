import { ApplicationFailure } from '@temporalio/common';
import { parsePolicyOutput } from '../core/think.js';
import type { PolicyTurnInput } from '../core/dialogueTurn.js';
import type { PolicyTurnResult } from '../core/transcript.js';
import { chatCompletion } from './chatCompletion.js';
import { replicaOrder } from '../core/replicaChoice.js';
import { createLogger } from '../log.js';
import { isModelMissing, withVersionReload } from '../vllm/republish.js';
import { withServedWeights } from '../vllm/servedWeights.js';

const log = createLogger({ component: 'policy' });

/** Failures of one replica, not of the call: down, or serving other full weights than the call's version. */
const REPLICA_FAILURES = ['LlmUnreachable', 'PolicyWeightsMismatch', 'PolicyWeightsChanged'];

/**
 * A replica that cannot answer this call: down, without the version (it lost its adapters), or on
 * other full weights (restarted on its launch weights; its publisher reloads it meanwhile).
 */
function replicaCannotServe(error: unknown): boolean {
  return (error instanceof ApplicationFailure && REPLICA_FAILURES.includes(error.type ?? '')) || isModelMissing(error);
}

/**
 * The call on the replica its seed picks (replicaOrder), on the next one when that one cannot serve
 * it; any other failure, or the last replica's, is the call's. `last`: no replica is left after this
 * one (the call then waits for a replica's publisher rather than fail at once).
 */
async function onReplicas<T>(
  input: PolicyTurnInput,
  call: (endpoint: PolicyTurnInput['endpoint'], last: boolean) => Promise<T>,
): Promise<T> {
  const order = replicaOrder(input.endpoint, input.seed);
  for (let i = 0; ; i++) {
    const endpoint = { ...input.endpoint, baseURL: order[i]! };
    try {
      return await call(endpoint, i === order.length - 1);
    } catch (error) {
      if (i === order.length - 1 || !replicaCannotServe(error)) throw error;
      log.warn('policy replica cannot serve the call; trying the next', {
        replica: order[i],
        next: order[i + 1],
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
}

/** One policy turn: a chat completion, then the think-then-say split. A malformed output is a result, not an error. */
export async function generatePolicyTurn(input: PolicyTurnInput): Promise<PolicyTurnResult> {
  // A version a restarted vLLM lost is published again from the trainer's checkpoint, then asked again.
  // A full-weight run's turn records the version vLLM served from the call's start to its end (see withServedWeights).
  const { value: response, weightVersion } = await onReplicas(input, (endpoint, last) =>
    withServedWeights(
      endpoint,
      () =>
        withVersionReload(endpoint, () =>
          chatCompletion({ endpoint, role: 'policy', messages: input.messages, seed: input.seed }),
        ),
      { waitForPublisher: last },
    ),
  );
  const parsed = parsePolicyOutput(response.content, input.think);
  return {
    raw: response.content,
    reply: parsed.reply,
    thinking: parsed.thinking,
    malformed: parsed.malformed,
    ...(parsed.problem !== undefined ? { problem: parsed.problem } : {}),
    model: response.model,
    ...(weightVersion !== undefined ? { weightVersion } : {}),
    latencyMs: response.latencyMs,
    usage: response.usage,
    ...(response.sampled
      ? { tokens: 'sampled' as const, tokenIds: response.sampled.tokenIds, logprobs: response.sampled.logprobs }
      : { tokens: 'retokenized' as const }),
  };
}
