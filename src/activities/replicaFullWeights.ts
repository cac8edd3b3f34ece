import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { createLogger } from '../log.js';
import { downloadAdapter, fetchAdapterManifest, removeStaleDownloads } from '../trainer/adapterFiles.js';
import type { TrainerEndpoint } from '../trainer/trainerClient.js';
import { firstTokenAt } from '../vllm/adapters.js';
import { reloadFullWeights } from '../vllm/fullWeights.js';
import { policyHeaders } from '../vllm/served.js';

const log = createLogger({ component: 'publisher' });

/** A step's full weights on a replica's disk: `weights-step-<k>-<digest>`, content-addressed as adapters are. */
const WEIGHTS_DIR = /^weights-step-(\d+)-[0-9a-f]{16}$/;

export interface FullWeightsOnReplica {
  trainer: TrainerEndpoint;
  runName: string;
  step: number;
  /** The replica's vLLM (…/v1), its key's variable and the model name it serves the weights under. */
  base: string;
  apiKeyEnv: string;
  servedModel: string;
  /** Where the publisher writes downloads: `<dir>/<run>/weights-step-<k>-<digest>`. */
  adapterDir: string;
  /** How many of the run's newest weight directories stay on disk (at least this step's). */
  keepOnDisk: number;
  /** Reload only when vLLM serves another version (restarted on its launch weights); else publish always reloads. */
  unlessServed: boolean;
}

/**
 * Full weights onto the vLLM beside this publisher: the step's model directory fetched from the
 * trainer's weights route (each file's sha256 and the digest checked, written to a temp directory
 * and renamed, so a publisher killed mid-download leaves nothing loadable under the name), reloaded
 * in place under the version (reloadFullWeights), the served model's first token timed, and the
 * run's older weight directories removed from disk (15 GB each at 7B), with what killed downloads
 * left (removeStaleDownloads).
 */
export async function publishFullWeightsHere(
  input: FullWeightsOnReplica,
): Promise<{ digest: string; firstTokenAtMs: number | null; reloadMs: number }> {
  const version = `${input.runName}@${input.step}`;
  const manifest = await fetchAdapterManifest(input.trainer, input.runName, input.step, 'weights');
  if (manifest.run_id !== input.runName || manifest.step !== input.step)
    throw ApplicationFailure.nonRetryable(
      `trainer ${input.trainer.url} answered the weights of ${manifest.run_id}@${manifest.step} for ${version}`,
      'TrainerBadResponse',
    );
  const runDir = join(input.adapterDir, input.runName);
  const dir = join(runDir, `weights-step-${input.step}-${manifest.digest.slice(0, 16)}`);
  const { reused } = await downloadAdapter(input.trainer, manifest, dir);
  const headers = policyHeaders(input.apiKeyEnv);
  const server = { base: input.base, headers, apiKeyEnv: input.apiKeyEnv };
  const { reloadMs } = await reloadFullWeights(server, version, dir, { unlessServed: input.unlessServed });
  const firstTokenAtMs = await firstTokenAt(input.base, headers, input.servedModel);
  const removed = [...removeOlderWeights(runDir, input.step, input.keepOnDisk, dir), ...removeStaleDownloads(runDir)];
  const bytes = manifest.files.reduce((n, f) => n + f.size, 0);
  log.info('full weights published on this replica', { version, dir, downloaded: !reused, reloadMs, bytes, removed });
  return { digest: manifest.digest, firstTokenAtMs, reloadMs };
}

/**
 * Removes the run's weight directories other than the newest `keep` steps up to `step`, `current`
 * being this step's (a later step's, or this step's with another digest, is a run re-created under
 * the name: stale too). Returns the names removed.
 */
export function removeOlderWeights(runDir: string, step: number, keep: number, current: string): string[] {
  const oldestKept = step - Math.max(1, keep) + 1;
  const removed: string[] = [];
  for (const name of readdirSync(runDir)) {
    const match = WEIGHTS_DIR.exec(name);
    if (!match) continue;
    const k = Number(match[1]);
    if (k >= oldestKept && k < step) continue;
    if (join(runDir, name) === current) continue;
    rmSync(join(runDir, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed.sort();
}
