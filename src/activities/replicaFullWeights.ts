import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { createLogger } from '../log.js';
import { downloadAdapter, fetchAdapterManifest, removeStaleDownloads } from '../trainer/adapterFiles.js';
import type { TrainerEndpoint } from '../trainer/trainerClient.js';
import { firstTokenAt } from '../vllm/adapters.js';
import { reloadFullWeights } from '../vllm/fullWeights.js';
import { servedWeightVersion, serverPaused, serverRoot, type FullWeightsServer } from '../vllm/fullWeightsRoutes.js';
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
  /** The `loading` label before the pause (replicas updated in turn: calls go elsewhere meanwhile). */
  labelFirst?: boolean;
}

/**
 * What a publisher last made its vLLM serve: `<adapterDir>/served-full-weights.json`, on the replica's
 * disk, so a publisher restarted with its vLLM (the host rebooted) still knows what to restore.
 */
const SERVED_RECORD = 'served-full-weights.json';
const servedRecordSchema = z.object({ version: z.string().min(1), dir: z.string().min(1) });
type ServedRecord = z.infer<typeof servedRecordSchema>;

function writeServedRecord(adapterDir: string, record: ServedRecord): void {
  const path = join(adapterDir, SERVED_RECORD);
  // Written aside and renamed: a publisher killed mid-write leaves the previous record whole.
  writeFileSync(`${path}.partial`, `${JSON.stringify(record)}\n`);
  renameSync(`${path}.partial`, path);
}

function readServedRecord(adapterDir: string): ServedRecord | null {
  let text: string;
  try {
    text = readFileSync(join(adapterDir, SERVED_RECORD), 'utf8');
  } catch {
    return null;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = servedRecordSchema.safeParse(json);
  return parsed.success ? parsed.data : null;
}

/**
 * This process's full-weight loads into one vLLM (keyed by its root), each with the record of what it
 * serves, one at a time: the keeper never reads a record older than the weights a publish loaded.
 */
const loading = new Map<string, Promise<unknown>>();

function oneAtATime<T>(key: string, work: () => Promise<T>): Promise<T> {
  const mine = (loading.get(key) ?? Promise.resolve()).catch(() => undefined).then(work);
  loading.set(key, mine);
  void mine
    .finally(() => {
      if (loading.get(key) === mine) loading.delete(key);
    })
    .catch(() => undefined);
  return mine;
}

/** After a restore that failed (its files gone, vLLM refusing them), the next try waits this long. */
const RESTORE_RETRY_MS = 60_000;

export interface ServedWeightsKeeper {
  /** One look at vLLM now, restoring it if need be (what each tick does). */
  check(): Promise<void>;
  stop(): void;
}

/**
 * Keeps the replica's vLLM on the full weights its publisher last published (the version the step
 * samples: full weights are published only between steps). A vLLM that restarted mid-step comes back
 * on its launch weights, and every call of the step on it fails its version check: asked every
 * `everyMs`, a vLLM found on other weights, or left paused, is reloaded from this replica's own
 * download of that version, so the step's calls (which wait for it: src/vllm/servedWeights.ts) go on
 * without an operator. Only between this process's own publishes (oneAtATime). Ticks stop once
 * `stopWhen` holds (the worker shuts down).
 */
export function keepServedWeights(options: {
  base: string;
  apiKeyEnv: string;
  adapterDir: string;
  everyMs: number;
  stopWhen: () => boolean;
}): ServedWeightsKeeper {
  const server: FullWeightsServer = {
    base: options.base,
    headers: policyHeaders(options.apiKeyEnv),
    apiKeyEnv: options.apiKeyEnv,
  };
  const check = () => oneAtATime(serverRoot(options.base), () => restoreServed(server, options.adapterDir));
  let busy = false;
  let retryAt = 0;
  const timer = setInterval(() => {
    if (options.stopWhen()) return clearInterval(timer);
    if (busy || Date.now() < retryAt) return;
    busy = true;
    check()
      .catch((error: unknown) => {
        retryAt = Date.now() + RESTORE_RETRY_MS;
        log.warn('could not bring vLLM back to the weights last published; trying again later', {
          server: serverRoot(options.base),
          retryInMs: RESTORE_RETRY_MS,
          error: error instanceof Error ? error.message : String(error),
        });
      })
      .finally(() => (busy = false));
  }, options.everyMs);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}

/** One keeper check: vLLM reloaded with the recorded version when it serves another or is paused. */
async function restoreServed(server: FullWeightsServer, adapterDir: string): Promise<void> {
  const record = readServedRecord(adapterDir);
  if (!record) return;
  let served: string | null;
  let paused: boolean;
  try {
    served = await servedWeightVersion(server);
    paused = await serverPaused(server);
  } catch (error) {
    // Down or starting: its calls fail as unreachable meanwhile; looked at again next tick.
    log.debug('vLLM not answering its weight routes', { server: serverRoot(server.base), error: String(error) });
    return;
  }
  if (served === record.version && !paused) return;
  if (!existsSync(record.dir))
    throw new Error(`${record.version}'s weights are no longer at ${record.dir}; the next step's check reloads them`);
  log.warn('vLLM does not serve the weights its publisher last published (it restarted?); reloading them', {
    server: serverRoot(server.base),
    served,
    paused,
    version: record.version,
    dir: record.dir,
  });
  const { reloadMs } = await reloadFullWeights(server, record.version, record.dir, { unlessServed: true });
  log.info('vLLM serves the weights last published again', { version: record.version, reloadMs });
}

/**
 * Full weights onto the vLLM beside this publisher: the step's model directory fetched from the
 * trainer's weights route (each file's sha256 and the digest checked, written to a temp directory
 * and renamed, so a publisher killed mid-download leaves nothing loadable under the name), reloaded
 * in place under the version (reloadFullWeights) and recorded as what this replica serves
 * (keepServedWeights restores it), the served model's first token timed, and the
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
  const { reloadMs } = await oneAtATime(serverRoot(input.base), async () => {
    const reloaded = await reloadFullWeights(server, version, dir, {
      unlessServed: input.unlessServed,
      ...(input.labelFirst ? { labelFirst: true } : {}),
    });
    // What keepServedWeights restores the vLLM to, written in the same turn as the load (never older).
    writeServedRecord(input.adapterDir, { version, dir });
    return reloaded;
  });
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
