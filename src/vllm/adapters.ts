import { ApplicationFailure } from '@temporalio/common';
import { createLogger } from '../log.js';
import { vllmErrorMessage } from './load.js';

const log = createLogger({ component: 'vllm-adapters' });

/** The step a version name `run@step` of `runName` holds, or null for any other name (the base model, other runs). */
export function versionStep(runName: string, name: string): number | null {
  if (!name.startsWith(`${runName}@`)) return null;
  const tail = name.slice(runName.length + 1);
  return /^\d+$/.test(tail) ? Number(tail) : null;
}

/**
 * The run's loaded versions to unload once `newest` is published: all but the newest `keep` of
 * them (the caller makes `keep` cover `maxStaleness`, so no rollout in flight samples one).
 */
export function versionsToUnload(runName: string, loaded: readonly string[], newest: number, keep: number): string[] {
  return loaded.filter((name) => {
    const step = versionStep(runName, name);
    return step !== null && step <= newest - keep;
  });
}

/**
 * Epoch ms at which vLLM answered a one-token completion of `version`: the first token served by
 * the new weights. A 404 means the name is not served yet (retried); another refusal leaves the
 * latency unmeasured (null) rather than failing a publish vLLM already confirmed.
 */
export async function firstTokenAt(
  base: string,
  headers: Record<string, string>,
  version: string,
): Promise<number | null> {
  const response = await fetch(`${base}/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: version, prompt: 'Hi', max_tokens: 1, temperature: 0 }),
    signal: AbortSignal.timeout(120_000),
  });
  const body = await response.text();
  if (response.ok) return Date.now();
  const message = vllmErrorMessage(body);
  if (response.status === 404)
    throw ApplicationFailure.retryable(`${base}/completions: ${version} not served yet: ${message}`, 'PublishPending');
  log.warn('first-token probe refused; publish latency not measured', { version, status: response.status, message });
  return null;
}

/**
 * Unloads `names` (`POST /v1/unload_lora_adapter`). A 404 (vLLM no longer has it) counts as done;
 * any other failure is returned, not thrown: an adapter left loaded costs memory, not correctness.
 */
export async function unloadAdapters(
  base: string,
  headers: Record<string, string>,
  names: readonly string[],
): Promise<{ unloaded: string[]; failures: string[] }> {
  const unloaded: string[] = [];
  const failures: string[] = [];
  for (const name of names) {
    try {
      const response = await fetch(`${base}/unload_lora_adapter`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ lora_name: name }),
        signal: AbortSignal.timeout(60_000),
      });
      const body = await response.text();
      if (response.ok || response.status === 404) unloaded.push(name);
      else failures.push(`${name}: HTTP ${response.status}: ${vllmErrorMessage(body)}`);
    } catch (error) {
      failures.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (failures.length > 0) log.warn('old adapters not unloaded', { base, failures });
  return { unloaded, failures };
}
