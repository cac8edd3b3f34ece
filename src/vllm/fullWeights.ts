import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import { createLogger } from '../log.js';
import { checkpointReload } from './checkpointReload.js';
import {
  loadingLabel,
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
 */
export async function publishFullWeights(
  server: FullWeightsServer,
  version: string,
  transport: FullWeightsTransport,
  options: { unlessServed?: boolean } = {},
): Promise<{ reloadMs: number }> {
  const key = serverRoot(server.base);
  const previous = publishing.get(key) ?? Promise.resolve();
  // `unlessServed`: calls that found the version missing at once load it once, not once each.
  const mine = previous
    .catch(() => undefined)
    .then(async () => {
      await resumeLeftPaused(server, version);
      return options.unlessServed && (await servedWeightVersion(server)) === version
        ? { reloadMs: 0 }
        : publishNow(server, version, transport);
    });
  publishing.set(key, mine);
  try {
    return await mine;
  } finally {
    if (publishing.get(key) === mine) publishing.delete(key);
  }
}

/** `publishFullWeights` by a reload of `weightsPath`, a complete model directory (the trainer commits checkpoints by rename). */
export function reloadFullWeights(
  server: FullWeightsServer,
  version: string,
  weightsPath: string,
  options: { unlessServed?: boolean } = {},
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
  if (served?.startsWith(loadingLabel(''))) {
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

async function publishNow(
  server: FullWeightsServer,
  version: string,
  transport: FullWeightsTransport,
): Promise<{ reloadMs: number }> {
  const what = transport.describe(version);
  const started = Date.now();
  let resumeFailure: string | null = null;
  try {
    await transport.prepare(server, what);
    await postRoute(server, '/pause?mode=wait', undefined, what);
    try {
      await postRoute(server, '/update_weight_version', { new_version: loadingLabel(version) }, what);
      await transport.load(server, what);
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
