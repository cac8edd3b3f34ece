import { ApplicationFailure } from '@temporalio/common';
import { parsePolicyOutput } from '../core/think.js';
import type { PolicyTurnInput } from '../core/dialogueTurn.js';
import type { PolicyTurnResult } from '../core/transcript.js';
import { chatCompletion } from './chatCompletion.js';
import { replicaOrder } from '../core/replicaChoice.js';
import { createLogger } from '../log.js';
import { isModelMissing, withVersionReload } from '../vllm/republish.js';
import { replicasNow, withServedWeights, type ReplicaNow } from '../vllm/servedWeights.js';

const log = createLogger({ component: 'policy' });

/** Failures of one replica, not of the call: down, or serving other full weights than the call's version. */
const REPLICA_FAILURES = ['LlmUnreachable', 'PolicyWeightsMismatch', 'PolicyWeightsChanged', 'PolicyReplicaReloading'];

/**
 * A replica that cannot answer this call: down, without the version (it lost its adapters), or on
 * other full weights (restarted on its launch weights; its publisher reloads it meanwhile).
 */
function replicaCannotServe(error: unknown): boolean {
  return (error instanceof ApplicationFailure && REPLICA_FAILURES.includes(error.type ?? '')) || isModelMissing(error);
}

/**
 * The call on the replica its seed picks (replicaOrder), on the next one when that one cannot serve
 * it; any other failure, or the last replica's, is the call's. `last`: no replica after this one
 * serves the call (the call then waits for this one's reload or publisher rather than fail at once).
 * With in-flight updates the replicas that serve a version the call takes go first (replicas
 * updated in turn: one reloads, some are older), in the seed's order.
 */
async function onReplicas<T>(
  input: PolicyTurnInput,
  call: (endpoint: PolicyTurnInput['endpoint'], last: boolean) => Promise<T>,
): Promise<T> {
  const seeded = replicaOrder(input.endpoint, input.seed);
  const now: ReplicaNow[] = seeded.length > 1 ? await replicasNow(input.endpoint, seeded) : ['serving'];
  const of = (kind: ReplicaNow) => seeded.filter((_, i) => now[i] === kind);
  const order = [...of('serving'), ...of('loading'), ...of('other')];
  // Where the call waits rather than move on: the last replica that serves; else the first one
  // loading (its reload ends soon); else the last, for its publisher, as without replicas' labels.
  const serving = of('serving').length;
  const waitsAt = serving > 0 ? serving - 1 : of('loading').length > 0 ? 0 : order.length - 1;
  for (let i = 0; ; i++) {
    const endpoint = { ...input.endpoint, baseURL: order[i]! };
    const last = i >= waitsAt;
    try {
      return await call(endpoint, last);
    } catch (error) {
      if (last || !replicaCannotServe(error)) throw error;
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
