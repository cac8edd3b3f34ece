import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { createLogger } from '../log.js';
import { checkpointReload } from './checkpointReload.js';
import {
  loadingLabel,
  loadingOf,
  postRoute,
  servedWeightVersion,
  serverPaused,
  serverRoot,
  type FullWeightsServer,
} from './fullWeightsRoutes.js';
import type { FullWeightsTransport } from './fullWeightsTransport.js';

const log = createLogger({ component: 'vllm-full-weights' });

/** Publishes in one process run one at a time per server, so two never interleave their pause and resume. */
const publishing = new Map<string, Promise<unknown>>();

/**
 * Makes vLLM serve `version`'s full weights, labelled `version`, through `transport` (a checkpoint
 * reload, or vLLM's native weight transfer): whatever need not hold requests up first
 * (`transport.prepare`), then `POST /pause?mode=wait` (requests in flight finish on the old weights,
 * new ones wait), the label set to `loading <version>` (a publish that dies half-way leaves weights
 * no rollout takes for any version), the weights loaded (`transport.load`), the label set to
 * `version`, then `POST /resume` whatever happened. Done only when `GET /weight_info` answers the
 * version and `GET /is_paused` false: a resume that failed leaves every later call waiting. A vLLM
 * found paused first (a publish whose resume failed) is resumed, so a step's check before it samples
 * (`unlessServed`) mends it too. Safe to run twice; a publish always loads (a run re-created under
 * its old name reuses the label, not the weights).
 *
 * `pause: 'keep'` (in-flight updates, `training.maxStaleness` >= 1): `POST /pause?mode=keep` freezes
 * the requests in flight instead of draining them, so the reload does not wait for the slowest
 * generation; they go on after `/resume` on the new weights (their calls see the label change and
 * ask again, see servedWeights.ts). vLLM keeps its prefix cache across a `keep` pause, so after the
 * load `POST /reset_prefix_cache?reset_running_requests=true` drops the KV computed by the old
 * weights (the frozen requests recompute theirs): no token of the new version is sampled on top of
 * the old version's cache. `unlessServed` may name the versions that suffice (any version of the
 * run at least as new as the one asked for): then a newer one already served is left as it is.
 */
export async function publishFullWeights(
  server: FullWeightsServer,
  version: string,
  transport: FullWeightsTransport,
  options: PublishFullWeightsOptions = {},
): Promise<{ reloadMs: number }> {
  const key = serverRoot(server.base);
  const previous = publishing.get(key) ?? Promise.resolve();
  // `unlessServed`: calls that found the version missing at once load it once, not once each.
  const mine = previous
    .catch(() => undefined)
    .then(async () => {
      await resumeLeftPaused(server, version);
      return options.unlessServed && servedSuffices(options.unlessServed, version, await servedWeightVersion(server))
        ? { reloadMs: 0 }
        : publishNow(server, version, transport, options.pause ?? 'wait', options.labelFirst === true);
    });
  publishing.set(key, mine);
  try {
    return await mine;
  } finally {
    if (publishing.get(key) === mine) publishing.delete(key);
  }
}

/** How vLLM holds requests while it loads: `wait` drains those in flight first, `keep` freezes them (in-flight updates). */
export type FullWeightsPause = 'wait' | 'keep';

export interface PublishFullWeightsOptions {
  /**
   * Load only when vLLM does not serve the version already: `true`, that version exactly; a
   * predicate, any served label it accepts (a newer version of the run, for in-flight updates).
   */
  unlessServed?: boolean | ((served: string | null) => boolean);
  /** Absent: `wait`. */
  pause?: FullWeightsPause;
  /**
   * The `loading <version>` label before the pause, not after it: calls that read labels first
   * (replicas updated in turn) go to another replica while the pause drains this one. A call in
   * flight meanwhile ends with another label than it began with and is asked again.
   */
  labelFirst?: boolean;
}

function servedSuffices(
  unlessServed: true | ((served: string | null) => boolean),
  version: string,
  served: string | null,
): boolean {
  return unlessServed === true ? served === version : unlessServed(served);
}

/** `publishFullWeights` by a reload of `weightsPath`, a complete model directory (the trainer commits checkpoints by rename). */
export function reloadFullWeights(
  server: FullWeightsServer,
  version: string,
  weightsPath: string,
  options: { unlessServed?: boolean; labelFirst?: boolean } = {},
): Promise<{ reloadMs: number }> {
  return publishFullWeights(server, version, checkpointReload(weightsPath), options);
}

/** `/resume` tries: a resume that fails leaves vLLM holding every call, so a passing fault is outwaited. */
const RESUME_ATTEMPTS = 3;
const RESUME_RETRY_MS = 500;

/** `POST /resume`, tried `RESUME_ATTEMPTS` times; the last failure is thrown. */
async function resume(server: FullWeightsServer, what: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await postRoute(server, '/resume', undefined, what);
      return;
    } catch (error) {
      if (attempt >= RESUME_ATTEMPTS) throw error;
      log.warn('vLLM /resume failed; trying again', { server: serverRoot(server.base), attempt, error: String(error) });
      await sleep(RESUME_RETRY_MS * attempt);
    }
  }
}

/**
 * A vLLM found paused before a publish: a publish whose resume failed (or that died before it)
 * left it so, and nothing else would resume it. Resumed at once, unless its label reads `loading …`:
 * then a publish may be loading into it, and the publish that follows resumes it once loaded.
 */
async function resumeLeftPaused(server: FullWeightsServer, version: string): Promise<void> {
  if (!(await serverPaused(server))) return;
  const served = await servedWeightVersion(server);
  const fields = { server: serverRoot(server.base), served, version };
  if (loadingOf(served) !== null) {
    log.warn('vLLM found paused half-way through a load; this publish resumes it once loaded', fields);
    return;
  }
  log.warn('vLLM found paused (a publish left it so); resuming it', fields);
  try {
    await resume(server, `resuming vLLM before publishing ${version}`);
  } catch (error) {
    throw ApplicationFailure.retryable(
      `vLLM ${serverRoot(server.base)} was found paused and could not be resumed: ${String(error)}`,
      'PublishFailed',
    );
  }
  log.info('vLLM resumed', fields);
}

const resetSchema = z.object({ success: z.boolean() });

/**
 * After a `keep` pause's load: the prefix cache (and the frozen requests' KV, which they recompute)
 * dropped, so nothing the new version samples reads the old version's KV. vLLM answers
 * `success: false` while blocks are still held (an async KV offload); that fails the publish, retried.
 */
async function dropOldCache(server: FullWeightsServer, what: string): Promise<void> {
  const answer = await postRoute(server, '/reset_prefix_cache?reset_running_requests=true', undefined, what);
  let json: unknown;
  try {
    json = JSON.parse(answer || 'null');
  } catch {
    json = undefined;
  }
  const parsed = resetSchema.safeParse(json);
  if (!parsed.success || !parsed.data.success)
    throw ApplicationFailure.retryable(
      `${what}: vLLM ${serverRoot(server.base)}/reset_prefix_cache answered ${answer.slice(0, 200)}: the old weights' cache may remain`,
      'PublishFailed',
    );
}

async function publishNow(
  server: FullWeightsServer,
  version: string,
  transport: FullWeightsTransport,
  pause: FullWeightsPause,
  labelFirst: boolean,
): Promise<{ reloadMs: number }> {
  const what = transport.describe(version);
  const started = Date.now();
  let resumeFailure: string | null = null;
  const loading = () => postRoute(server, '/update_weight_version', { new_version: loadingLabel(version) }, what);
  try {
    await transport.prepare(server, what);
    if (labelFirst) await loading();
    await postRoute(server, `/pause?mode=${pause}`, undefined, what);
    try {
      if (!labelFirst) await loading();
      await transport.load(server, what);
      if (pause === 'keep') await dropOldCache(server, what);
      await postRoute(server, '/update_weight_version', { new_version: version }, what);
    } finally {
      // A load's own failure is the one to report; a failed resume is found by the check below.
      await resume(server, what).catch((error: unknown) => {
        resumeFailure = String(error);
        log.warn('resume after a publish failed', { version, error: resumeFailure });
      });
    }
  } catch (error) {
    transport.failed(server);
    throw error;
  }
  const reloadMs = Date.now() - started;
  const served = await servedWeightVersion(server);
  if (served !== version)
    throw ApplicationFailure.retryable(
      `${what}: vLLM ${serverRoot(server.base)}/weight_info answers ${JSON.stringify(served)} after the publish`,
      'PublishFailed',
    );
  if (await serverPaused(server))
    throw ApplicationFailure.retryable(
      `${what}: vLLM ${serverRoot(server.base)} is still paused after the publish (${resumeFailure ?? '/resume answered'}): the next try resumes it`,
      'PublishFailed',
    );
  transport.served(server, version);
  log.info('full weights published', { version, transport: transport.name, reloadMs });
  return { reloadMs };
}
