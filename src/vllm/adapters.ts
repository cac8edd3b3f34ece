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

/** The statuses of a probe the policy server will answer the same way however often it is asked. */
const PERMANENT_PROBE_STATUSES = new Set([400, 401, 403, 404, 405, 413, 415, 422]);

/**
 * Whether a 404 says that `version` is not served (yet), rather than that the route is missing:
 * vLLM names the model ("The model `run@3` does not exist."); a server without the route answers
 * "Not Found" or names the path.
 */
export function saysVersionNotServed(message: string, version: string): boolean {
  return message.includes(version) || /\bmodel\b.*\b(does not exist|not found|not loaded)/i.test(message);
}

/**
 * Epoch ms at which the policy server answered a one-token chat completion of `version` (the call
 * the policy makes): the first token served by the new weights. A 404 that says the version is not
 * served yet is retried (`PublishPending`). Any other permanent answer (a missing chat route, a
 * refused key, a request the server rejects) fails for good (`PublishRefused`, naming the endpoint
 * and the answer: the run waits for the operator), since every policy call would meet it too. A
 * server error leaves the latency unmeasured (null) rather than failing a publish vLLM already confirmed.
 */
export async function firstTokenAt(
  base: string,
  headers: Record<string, string>,
  version: string,
): Promise<number | null> {
  const endpoint = `${base}/chat/completions`;
  const response = await fetch(endpoint, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      model: version,
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 1,
      temperature: 0,
    }),
    signal: AbortSignal.timeout(120_000),
  });
  const body = await response.text();
  if (response.ok) return Date.now();
  const message = vllmErrorMessage(body);
  if (response.status === 404 && saysVersionNotServed(message, version))
    throw ApplicationFailure.retryable(`${endpoint}: ${version} not served yet: ${message}`, 'PublishPending');
  if (PERMANENT_PROBE_STATUSES.has(response.status))
    throw ApplicationFailure.create({
      message: `refused: policy server ${endpoint} answered HTTP ${response.status} to a one-token chat completion of version ${version}: ${message}`,
      type: 'PublishRefused',
      nonRetryable: true,
      details: [{ endpoint, version, status: response.status, message }],
    });
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
