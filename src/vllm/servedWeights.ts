import { ApplicationFailure } from '@temporalio/common';
import type { EndpointCall } from '../core/rolloutSettingsSchema.js';
import { createLogger } from '../log.js';
import { versionStep } from './adapters.js';
import { checkpointReload } from './checkpointReload.js';
import { publishFullWeights } from './fullWeights.js';
import { servedWeightVersion } from './fullWeightsRoutes.js';
import { ncclTransfer } from './ncclTransfer.js';
import { exportPathOf } from './republish.js';
import { policyHeaders } from './served.js';

const log = createLogger({ component: 'served-weights' });

/**
 * A policy call of a full-weight run on vLLM (`endpoint.weightVersion` set). Before it, vLLM must
 * serve that version: when it serves anything else (restarted on its launch weights, a reload that
 * died half-way) the version is loaded again first: reloaded from the trainer's checkpoint, or sent
 * by the trainer over NCCL. After it, vLLM must still serve it, else the call fails to be retried
 * (`PolicyWeightsChanged`): a reply is recorded under the one version that sampled it from start to
 * end. Other endpoints just run `call`.
 */
export async function withServedWeights<T>(endpoint: EndpointCall, call: () => Promise<T>): Promise<T> {
  const expected = endpoint.weightVersion;
  if (expected === undefined) return call();
  const server = { base: endpoint.baseURL, headers: policyHeaders(endpoint.apiKeyEnv), apiKeyEnv: endpoint.apiKeyEnv };
  const before = await servedWeightVersion(server);
  if (before !== expected) {
    const from = endpoint.reloadFrom;
    const step = from ? versionStep(from.runName, expected) : null;
    if (!from || step === null)
      throw ApplicationFailure.nonRetryable(
        `vLLM ${endpoint.baseURL} serves weights ${JSON.stringify(before)}, not ${expected}, and nothing says where to reload them from`,
        'PolicyWeightsMismatch',
      );
    log.warn('vLLM serves other weights than the version this call samples; reloading it', { before, expected });
    const trainer = { url: from.trainerUrl, tokenEnv: from.tokenEnv };
    const transport = from.nccl
      ? ncclTransfer({ trainer, runName: from.runName, step, rendezvous: from.nccl })
      : checkpointReload(await exportPathOf({ trainer, runName: from.runName, step }));
    await publishFullWeights(server, expected, transport, { unlessServed: true });
  }
  const value = await call();
  const after = await servedWeightVersion(server);
  if (after !== expected)
    throw ApplicationFailure.retryable(
      `vLLM ${endpoint.baseURL} served ${JSON.stringify(after)} once the call ended, not ${expected}: asked again`,
      'PolicyWeightsChanged',
    );
  return value;
}
