import { ApplicationFailure } from '@temporalio/common';
import { firstTokenAt, unloadAdapters, versionStep, versionsToUnload } from './adapters.js';

/** The policy server's headers: JSON, and its key from `apiKeyEnv` when set. */
export function policyHeaders(apiKeyEnv: string): Record<string, string> {
  const key = process.env[apiKeyEnv];
  return { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
}

/**
 * The model ids `base/models` lists, once it lists `version`: not yet listed is retried
 * (`PublishPending`); a refused key fails for good, naming the variable, instead of waiting.
 */
export async function listedWithVersion(
  base: string,
  headers: Record<string, string>,
  apiKeyEnv: string,
  version: string,
): Promise<string[]> {
  const models = await fetch(`${base}/models`, { headers, signal: AbortSignal.timeout(60_000) });
  if (models.status === 401 || models.status === 403)
    throw ApplicationFailure.nonRetryable(
      `${base}/models refused the key in $${apiKeyEnv} (HTTP ${models.status}) while publishing ${version}`,
      'PublishRejected',
    );
  const list = (await models.json().catch(() => null)) as { data?: { id?: string }[] } | null;
  if (!models.ok || !list?.data?.some((m) => m.id === version))
    throw ApplicationFailure.retryable(`${base}/models does not list ${version} yet`, 'PublishPending');
  return list.data.map((m) => m.id ?? '');
}

export interface ServedVersion {
  /** Epoch ms of the first token the new version served; null when not measured. */
  firstTokenAtMs: number | null;
  unloaded: string[];
  /** Unloads vLLM refused or that did not reach it: reported by the run, not fatal. */
  unloadFailures: string[];
}

/**
 * Once vLLM lists `version`: times its first token, then unloads the run's versions older than the
 * newest `unload.keep` (none when `unload` is absent).
 */
export async function probeAndUnload(
  base: string,
  headers: Record<string, string>,
  version: string,
  listed: readonly string[],
  unload: { runName: string; keep: number } | undefined,
): Promise<ServedVersion> {
  const firstTokenAtMs = await firstTokenAt(base, headers, version);
  const newest = unload ? versionStep(unload.runName, version) : null;
  const stale = unload && newest !== null ? versionsToUnload(unload.runName, listed, newest, unload.keep) : [];
  const { unloaded, failures } = await unloadAdapters(base, headers, stale);
  return { firstTokenAtMs, unloaded, unloadFailures: failures };
}
