import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import type { EndpointCall } from '../core/rolloutSettingsSchema.js';
import { createLogger } from '../log.js';
import { versionStep } from './adapters.js';
import { checkpointReload } from './checkpointReload.js';
import { publishFullWeights } from './fullWeights.js';
import { servedWeightVersion, serverRoot, type FullWeightsServer } from './fullWeightsRoutes.js';
import { ncclTransfer } from './ncclTransfer.js';
import { exportPathOf } from './republish.js';
import { policyHeaders } from './served.js';

const log = createLogger({ component: 'served-weights' });

/**
 * A replica's vLLM found on other weights is reloaded by its own publisher (replicaFullWeights.ts
 * keeps it on the version it last published): the call waits this long for that, asking vLLM every
 * `RELOAD_POLL_MS`. A 7B reload from the replica's disk takes tens of seconds; a wait past this
 * bound fails the attempt, retried after `RELOAD_RETRY_DELAY_MS` (the activity's retries, then the
 * run's, stand behind it).
 */
const PUBLISHER_RELOAD_WAIT_MS = 5 * 60_000;
const RELOAD_POLL_MS = 500;
const RELOAD_RETRY_DELAY_MS = 15_000;

export interface ServedWeightsOptions {
  /**
   * Whether a replica found on other weights is waited for (its publisher reloads it), or fails the
   * call at once so the next replica takes it. Default true: the last replica the call can go to.
   */
  waitForPublisher?: boolean;
}

/**
 * A policy call of a full-weight run on vLLM (`endpoint.weightVersion` set). Before it, vLLM must
 * serve that version: when it serves anything else (restarted on its launch weights, a reload that
 * died half-way) the version is loaded again first: reloaded from the trainer's checkpoint, or sent
 * by the trainer over NCCL (one host, `reloadFrom`); on a replica, by the publisher beside it, which
 * the call waits for (`PolicyWeightsMismatch`, retried, when it does not come). After it, vLLM must
 * still serve it, else the call fails to be retried (`PolicyWeightsChanged`): a reply is recorded
 * under the one version that sampled it from start to end. Other endpoints just run `call`.
 */
export async function withServedWeights<T>(
  endpoint: EndpointCall,
  call: () => Promise<T>,
  options: ServedWeightsOptions = {},
): Promise<T> {
  const expected = endpoint.weightVersion;
  if (expected === undefined) return call();
  const server = { base: endpoint.baseURL, headers: policyHeaders(endpoint.apiKeyEnv), apiKeyEnv: endpoint.apiKeyEnv };
  const before = await servedWeightVersion(server);
  if (before !== expected) {
    const from = endpoint.reloadFrom;
    if (from) await reloadHere(server, from, expected, before);
    else await reloadedByPublisher(server, expected, before, options.waitForPublisher ?? true);
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

/** One host (`reloadFrom`): the call itself reloads `expected` from the trainer's checkpoint, or has the trainer send it over NCCL. */
async function reloadHere(
  server: FullWeightsServer,
  from: NonNullable<EndpointCall['reloadFrom']>,
  expected: string,
  before: string | null,
): Promise<void> {
  const step = versionStep(from.runName, expected);
  if (step === null)
    throw ApplicationFailure.nonRetryable(
      `vLLM ${server.base} serves weights ${JSON.stringify(before)}, not ${expected}, and nothing says where to reload them from`,
      'PolicyWeightsMismatch',
    );
  log.warn('vLLM serves other weights than the version this call samples; reloading it', { before, expected });
  const trainer = { url: from.trainerUrl, tokenEnv: from.tokenEnv };
  const transport = from.nccl
    ? ncclTransfer({ trainer, runName: from.runName, step, rendezvous: from.nccl })
    : checkpointReload(await exportPathOf({ trainer, runName: from.runName, step }));
  await publishFullWeights(server, expected, transport, { unlessServed: true });
}

/**
 * A replica on other weights than `expected` (it restarted on its launch weights mid-step): its
 * publisher reloads the version it last published, which is the one the step samples (full weights
 * are published only between steps). Waited for when `wait`; else, or once the wait is over, the
 * call fails to be retried (`PolicyWeightsMismatch`): on another replica at once, on this one later.
 */
async function reloadedByPublisher(
  server: FullWeightsServer,
  expected: string,
  before: string | null,
  wait: boolean,
): Promise<void> {
  const fields = { server: serverRoot(server.base), served: before, expected };
  const started = Date.now();
  const deadline = started + PUBLISHER_RELOAD_WAIT_MS;
  if (wait) {
    log.warn(
      'vLLM replica serves other weights than this call samples; waiting for its publisher to reload it',
      fields,
    );
    for (;;) {
      await sleep(RELOAD_POLL_MS);
      // Unreachable meanwhile (it restarts again) is the call's failure too: retried.
      if ((await servedWeightVersion(server)) === expected) {
        log.info('vLLM replica serves the version again', {
          ...fields,
          served: expected,
          waitedMs: Date.now() - started,
        });
        return;
      }
      if (Date.now() >= deadline) break;
    }
  }
  throw ApplicationFailure.create({
    message:
      `vLLM ${serverRoot(server.base)} serves weights ${JSON.stringify(before)}, not ${expected}` +
      (wait
        ? `, still after ${PUBLISHER_RELOAD_WAIT_MS / 1000} s: is its publisher (attune worker --role publisher) running? asked again`
        : ': its publisher reloads it; the call goes to another replica'),
    type: 'PolicyWeightsMismatch',
    nonRetryable: false,
    nextRetryDelay: RELOAD_RETRY_DELAY_MS,
  });
}
