import { ApplicationFailure } from '@temporalio/common';
import { createLogger } from '../log.js';
import { checkpointReload } from './checkpointReload.js';
import {
  loadingLabel,
  postRoute,
  servedWeightVersion,
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
 * `version`, then `POST /resume` whatever happened. Checked with `GET /weight_info` afterwards.
 * Safe to run twice; a publish always loads (a run re-created under its old name reuses the label,
 * not the weights).
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
    .then(async () =>
      options.unlessServed && (await servedWeightVersion(server)) === version
        ? { reloadMs: 0 }
        : publishNow(server, version, transport),
    );
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

async function publishNow(
  server: FullWeightsServer,
  version: string,
  transport: FullWeightsTransport,
): Promise<{ reloadMs: number }> {
  const what = transport.describe(version);
  const started = Date.now();
  try {
    await transport.prepare(server, what);
    await postRoute(server, '/pause?mode=wait', undefined, what);
    try {
      await postRoute(server, '/update_weight_version', { new_version: loadingLabel(version) }, what);
      await transport.load(server, what);
      await postRoute(server, '/update_weight_version', { new_version: version }, what);
    } finally {
      await postRoute(server, '/resume', undefined, what).catch((error: unknown) =>
        log.warn('resume after a publish failed', { version, error: String(error) }),
      );
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
  transport.served(server, version);
  log.info('full weights published', { version, transport: transport.name, reloadMs });
  return { reloadMs };
}
