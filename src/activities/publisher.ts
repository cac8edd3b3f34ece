import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { createLogger } from '../log.js';
import {
  downloadAdapter,
  fetchAdapterManifest,
  removeStaleDownloads,
  removeStaleDownloadsUnder,
} from '../trainer/adapterFiles.js';
import { loadLoraAdapter } from '../vllm/load.js';
import { listedWithVersion, policyHeaders, probeAndUnload } from '../vllm/served.js';
import { publishFullWeightsHere } from './replicaFullWeights.js';
import { msSince, type PublishResult } from './runBookkeeping.js';

const log = createLogger({ component: 'publisher' });

/** What the training workflow asks of a replica's publisher: the step, and where the trainer is. */
export interface ReplicaPublishInput {
  trainer: { url: string; tokenEnv: string };
  runName: string;
  step: number;
  /** The replica as the run's config names it (for messages; the worker's own --policy-url is what it loads into). */
  replica: { name: string; baseURL: string };
  /** Keep only the run's newest `keep` versions loaded on this replica (full weights: on its disk). */
  unload?: { runName: string; keep: number };
  /** `full`: the step's whole model reloaded in place, served under `servedModel` (absent: a LoRA adapter). */
  weights?: 'full';
  servedModel?: string;
  /** Full weights: reload only if vLLM serves another version (the check before a step samples). */
  ensure?: boolean;
  /**
   * Full weights on replicas updated in turn: the label reads `loading <version>` before the pause,
   * so calls go to the other replicas while this one's calls in flight drain (see publishFullWeights).
   */
  labelFirst?: true;
}

export interface ReplicaPublishResult extends PublishResult {
  replica: string;
  /** The trainer's digest of the adapter now served under the version's name. */
  digest: string;
}

/** The publisher worker's own side: its vLLM, that server's key, and where adapters are written. */
export interface PublisherOptions {
  /** vLLM's OpenAI base URL on this host (…/v1). */
  policyBaseURL: string;
  apiKeyEnv: string;
  adapterDir: string;
}

/**
 * The activities of a replica's publish queue (`attune worker --role publisher`). `publishToReplica`
 * fetches the step's adapter from the trainer (the adapter route; the digest checked), writes it under
 * `<adapterDir>/<run>/step-<k>-<digest>` (content-addressed: a retry finds it there, a run re-created
 * under an old name gets a new directory), loads it into the local vLLM in place under `run@k`, waits
 * until vLLM lists it, times its first token and unloads versions older than `unload.keep`. A full
 * fine-tuning run's step (`weights: full`) is its whole model, reloaded in place (replicaFullWeights.ts).
 * Safe to run twice: the download is reused and `load_inplace` loads the same files again. Made at
 * the worker's start, which removes what downloads killed part-way left (removeStaleDownloads), as
 * each publish does in its run's directory.
 */
export function createPublisherActivities(options: PublisherOptions) {
  const base = options.policyBaseURL.replace(/\/$/, '');
  const stale = removeStaleDownloadsUnder(options.adapterDir);
  if (stale.length > 0)
    log.info('removed the temp directories of interrupted downloads', {
      adapterDir: options.adapterDir,
      removed: stale,
    });
  return {
    async publishToReplica(input: ReplicaPublishInput): Promise<ReplicaPublishResult> {
      const startedAtMs = Date.now();
      const version = `${input.runName}@${input.step}`;
      if (input.weights === 'full') {
        if (!input.servedModel)
          throw ApplicationFailure.nonRetryable(
            `${version}: full weights to publish without the served model's name`,
            'PublishRefused',
          );
        const published = await publishFullWeightsHere({
          trainer: input.trainer,
          runName: input.runName,
          step: input.step,
          base,
          apiKeyEnv: options.apiKeyEnv,
          servedModel: input.servedModel,
          adapterDir: options.adapterDir,
          keepOnDisk: input.unload?.keep ?? 2,
          unlessServed: input.ensure === true,
          ...(input.labelFirst ? { labelFirst: true } : {}),
        });
        return {
          version,
          replica: input.replica.name,
          digest: published.digest,
          firstTokenAtMs: published.firstTokenAtMs,
          publishMs: msSince(startedAtMs, published.firstTokenAtMs),
          loadMs: published.reloadMs,
          unloaded: [],
          unloadFailures: [],
        };
      }
      const manifest = await fetchAdapterManifest(input.trainer, input.runName, input.step);
      if (manifest.run_id !== input.runName || manifest.step !== input.step)
        throw ApplicationFailure.nonRetryable(
          `trainer ${input.trainer.url} answered the adapter of ${manifest.run_id}@${manifest.step} for ${version}`,
          'TrainerBadResponse',
        );
      const dir = join(options.adapterDir, input.runName, `step-${input.step}-${manifest.digest.slice(0, 16)}`);
      const { reused } = await downloadAdapter(input.trainer, manifest, dir);
      const staleDownloads = removeStaleDownloads(join(options.adapterDir, input.runName));
      const headers = policyHeaders(options.apiKeyEnv);
      await loadLoraAdapter({ base, headers, version, adapterPath: dir, apiKeyEnv: options.apiKeyEnv });
      const listed = await listedWithVersion(base, headers, options.apiKeyEnv, version);
      const served = await probeAndUnload(base, headers, version, listed, input.unload);
      log.info('version published on this replica', {
        replica: input.replica.name,
        version,
        digest: manifest.digest,
        dir,
        downloaded: !reused,
        ...(staleDownloads.length > 0 ? { staleDownloads } : {}),
      });
      return {
        version,
        replica: input.replica.name,
        digest: manifest.digest,
        ...served,
        publishMs: msSince(startedAtMs, served.firstTokenAtMs),
      };
    },
  };
}

export type PublisherActivities = ReturnType<typeof createPublisherActivities>;
