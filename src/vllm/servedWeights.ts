import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import type { EndpointCall } from '../core/rolloutSettingsSchema.js';
import { createLogger } from '../log.js';
import { versionStep } from './adapters.js';
import { checkpointReload } from './checkpointReload.js';
import { publishFullWeights, type FullWeightsPause } from './fullWeights.js';
import { loadingOf, servedWeightVersion, serverRoot, type FullWeightsServer } from './fullWeightsRoutes.js';
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

/** A call that straddled a reload is asked again this often before it fails to be retried (`PolicyWeightsChanged`). */
const STRADDLE_ASKS = 3;
/** While vLLM reads `loading <a version the call takes>` (a publish under way), it is asked this often. */
const LOADING_POLL_MS = 100;

/** A policy call's value, and the weight version vLLM served from its start to its end (absent: not a full-weight run). */
export interface ServedCall<T> {
  value: T;
  weightVersion?: string;
}

/**
 * A policy call of a full-weight run on vLLM (`endpoint.weightVersion` set). Before it, vLLM must
 * serve that version: when it serves anything else (restarted on its launch weights, a reload that
 * died half-way) the version is loaded again first: reloaded from the trainer's checkpoint, or sent
 * by the trainer over NCCL (one host, `reloadFrom`); on a replica, by the publisher beside it, which
 * the call waits for (`PolicyWeightsMismatch`, retried, when it does not come). After it, vLLM must
 * still serve it, else the call fails to be retried (`PolicyWeightsChanged`): a reply is recorded
 * under the one version that sampled it from start to end. Other endpoints just run `call`.
 *
 * With in-flight updates (`endpoint.acceptNewerWeights`), `weightVersion` is the oldest version the
 * call takes: a newer version of the run is sampled as it is (only an older or unknown label is
 * reloaded or waited for, and a publish under way, `loading <newer>`, is waited for). The version
 * read before the call is the one recorded, when vLLM still serves it after the call. Versions only
 * grow, so the same label before and after proves no reload came in between; a call whose label
 * changed straddled one (its tokens may come from two versions) and is made again at once, the
 * same request (same messages and seed), on the version now served.
 */
export async function withServedWeights<T>(
  endpoint: EndpointCall,
  call: () => Promise<T>,
  options: ServedWeightsOptions = {},
): Promise<ServedCall<T>> {
  const expected = endpoint.weightVersion;
  if (expected === undefined) return { value: await call() };
  const server = { base: endpoint.baseURL, headers: policyHeaders(endpoint.apiKeyEnv), apiKeyEnv: endpoint.apiKeyEnv };
  if (endpoint.acceptNewerWeights) return withNewestWeights(server, endpoint, expected, call, options);
  const before = await servedWeightVersion(server);
  if (before !== expected) {
    const from = endpoint.reloadFrom;
    if (from) await reloadHere(server, from, expected, before, (served) => served === expected);
    else await reloadedByPublisher(server, expected, before, options.waitForPublisher ?? true, (s) => s === expected);
  }
  const value = await call();
  const after = await servedWeightVersion(server);
  if (after !== expected)
    throw ApplicationFailure.retryable(
      `vLLM ${endpoint.baseURL} served ${JSON.stringify(after)} once the call ended, not ${expected}: asked again`,
      'PolicyWeightsChanged',
    );
  return { value, weightVersion: expected };
}

/**
 * Whether `served` is a version of `oldest`'s run at least as new as it: what a call with in-flight
 * updates samples. Labels of other runs, `default`, `loading …` and anything unparsed are not.
 */
function servesAtLeast(oldest: string, served: string | null): boolean {
  if (served === null) return false;
  if (served === oldest) return true;
  const runName = oldest.slice(0, oldest.lastIndexOf('@'));
  const floor = versionStep(runName, oldest);
  const step = versionStep(runName, served);
  return floor !== null && step !== null && step >= floor;
}

/** `withServedWeights` with in-flight updates: any version from `oldest` on, the one served recorded; straddlers asked again. */
async function withNewestWeights<T>(
  server: FullWeightsServer,
  endpoint: EndpointCall,
  oldest: string,
  call: () => Promise<T>,
  options: ServedWeightsOptions,
): Promise<ServedCall<T>> {
  const takes = (served: string | null) => servesAtLeast(oldest, served);
  let after: string | null = null;
  for (let ask = 1; ask <= STRADDLE_ASKS; ask++) {
    let before = await servedWeightVersion(server);
    const loadingVersion = loadingOf(before);
    if (before !== null && loadingVersion !== null && takes(loadingVersion)) {
      // Another replica serves a version the call takes: it goes there rather than wait out the reload.
      if (!(options.waitForPublisher ?? true))
        throw ApplicationFailure.retryable(
          `vLLM ${serverRoot(server.base)} reads ${JSON.stringify(before)}: the call goes to another replica`,
          'PolicyReplicaReloading',
        );
      before = await loaded(server, before);
    }
    if (!takes(before)) {
      const from = endpoint.reloadFrom;
      if (from) await reloadHere(server, from, oldest, before, takes, 'keep');
      else await reloadedByPublisher(server, oldest, before, options.waitForPublisher ?? true, takes);
      before = await servedWeightVersion(server);
      if (!takes(before))
        throw ApplicationFailure.retryable(
          `vLLM ${serverRoot(server.base)} serves ${JSON.stringify(before)} just after ${oldest} was loaded: asked again`,
          'PolicyWeightsMismatch',
        );
    }
    const value = await call();
    after = await servedWeightVersion(server);
    if (after === before) return { value, weightVersion: before! };
    log.info('vLLM reloaded its weights while the policy call ran; asking again on the version it serves now', {
      server: serverRoot(server.base),
      before,
      after,
      ask,
    });
  }
  throw ApplicationFailure.retryable(
    `vLLM ${endpoint.baseURL}: the weights changed during each of ${STRADDLE_ASKS} asks (last ${JSON.stringify(after)}), none sampled by one version: asked again`,
    'PolicyWeightsChanged',
  );
}

/** The label once a publish under way (`loading`) is done; a publish that does not end in time is the call's failure, retried. */
async function loaded(server: FullWeightsServer, loading: string): Promise<string | null> {
  const deadline = Date.now() + PUBLISHER_RELOAD_WAIT_MS;
  for (;;) {
    await sleep(LOADING_POLL_MS);
    const served = await servedWeightVersion(server);
    if (served !== loading) return served;
    if (Date.now() >= deadline)
      throw ApplicationFailure.create({
        message: `vLLM ${serverRoot(server.base)} still reads ${JSON.stringify(loading)} after ${PUBLISHER_RELOAD_WAIT_MS / 1000} s: asked again`,
        type: 'PolicyWeightsMismatch',
        nonRetryable: false,
        nextRetryDelay: RELOAD_RETRY_DELAY_MS,
      });
  }
}

/** One host (`reloadFrom`): the call itself reloads `expected` from the trainer's checkpoint, or has the trainer send it over NCCL. */
async function reloadHere(
  server: FullWeightsServer,
  from: NonNullable<EndpointCall['reloadFrom']>,
  expected: string,
  before: string | null,
  suffices: (served: string | null) => boolean,
  pause?: FullWeightsPause,
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
  // Another call may have loaded it (or a publish a newer version) meanwhile: then nothing is loaded.
  await publishFullWeights(server, expected, transport, { unlessServed: suffices, ...(pause ? { pause } : {}) });
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
  suffices: (served: string | null) => boolean,
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
      const served = await servedWeightVersion(server);
      if (suffices(served)) {
        log.info('vLLM replica serves the version again', {
          ...fields,
          served,
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

/** What a replica offers a call with in-flight updates right now (replicasNow). */
export type ReplicaNow = 'serving' | 'loading' | 'other';

/**
 * What each of the replicas `bases` offers a call with in-flight updates, their labels read in
 * parallel: `serving` a version the call takes, `loading` one it takes (a publish under way), or
 * `other` (older, unknown, unreachable). Without in-flight updates every replica counts as serving.
 */
export async function replicasNow(endpoint: EndpointCall, bases: readonly string[]): Promise<ReplicaNow[]> {
  const oldest = endpoint.weightVersion;
  if (oldest === undefined || !endpoint.acceptNewerWeights) return bases.map(() => 'serving');
  const headers = policyHeaders(endpoint.apiKeyEnv);
  return Promise.all(
    bases.map(async (base): Promise<ReplicaNow> => {
      let label: string | null;
      try {
        label = await servedWeightVersion({ base, headers, apiKeyEnv: endpoint.apiKeyEnv });
      } catch {
        return 'other';
      }
      if (servesAtLeast(oldest, label)) return 'serving';
      const loading = loadingOf(label);
      return loading !== null && servesAtLeast(oldest, loading) ? 'loading' : 'other';
    }),
  );
}
