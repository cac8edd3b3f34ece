import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { ownDeadlineFetch } from '../http/ownDeadlines.js';

/**
 * vLLM's error bodies: `{"error": {"message", "type", "code"}}` (0.32), `{"object": "error",
 * "message", ...}` (older servers), and `{"error": "Unauthorized"}` from its API-key check.
 */
const vllmErrorSchema = z.union([
  z.object({ error: z.object({ message: z.string() }) }),
  z.object({ error: z.string() }),
  z.object({ message: z.string() }),
]);

/** The server's own message in an error body, else the body itself (shortened). */
export function vllmErrorMessage(body: string): string {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = null;
  }
  const parsed = vllmErrorSchema.safeParse(json);
  if (!parsed.success) return body.trim().slice(0, 500) || '(empty body)';
  const error = parsed.data;
  if ('error' in error) return typeof error.error === 'string' ? error.error : error.error.message;
  return error.message;
}

/**
 * A load vLLM refuses again however often it is retried: a 4xx (no adapter at the path, wrong key,
 * bad request) other than a timeout or rate limit, or a 500 from its LoRA loader (a rank above
 * --max-lora-rank). Other 5xx (503 while starting or overloaded) pass.
 */
export function isRefusedLoad(status: number, message: string): boolean {
  if (status === 408 || status === 429) return false;
  if (status >= 400 && status < 500) return true;
  return status === 500 && /lora|adapter|rank/i.test(message);
}

export interface LoraLoad {
  /** The policy server's OpenAI base URL (…/v1), without a trailing slash. */
  base: string;
  headers: Record<string, string>;
  version: string;
  adapterPath: string;
  apiKeyEnv: string;
}

/**
 * Loads `version`'s adapter into vLLM (`POST /v1/load_lora_adapter`), in place (`load_inplace`):
 * a name vLLM already has is loaded again from this adapter, so it never keeps serving other
 * weights under the name (a run deleted and re-created under its old name while vLLM stays up, a
 * checkpoint the trainer rewrote after a crash). A server that answers "already loaded" to this
 * request ignored `load_inplace` (older than vLLM 0.10): it would go on serving the old weights under
 * the name, so that is refused too. A refusal fails for good (`PublishRefused`, naming the
 * endpoint, version, adapter path and vLLM's message: the run waits for the operator); anything
 * else that fails (503, a refused connection) is retried.
 */
export async function loadLoraAdapter(load: LoraLoad): Promise<void> {
  const endpoint = `${load.base}/load_lora_adapter`;
  const response = await ownDeadlineFetch(endpoint, {
    method: 'POST',
    headers: load.headers,
    body: JSON.stringify({ lora_name: load.version, lora_path: load.adapterPath, load_inplace: true }),
    signal: AbortSignal.timeout(600_000),
  });
  const body = await response.text();
  if (response.ok) return;
  const message = vllmErrorMessage(body);
  const keyHint = response.status === 401 || response.status === 403 ? ` (check $${load.apiKeyEnv})` : '';
  const tooOld = /already (been )?loaded/i.test(message)
    ? ' (this vLLM does not support load_inplace, so it would keep serving the old weights under the name: upgrade it to the version scripts/vllm/setup.sh installs)'
    : '';
  const what = `vLLM ${endpoint}: HTTP ${response.status}${keyHint}${tooOld} loading version ${load.version} from adapter ${load.adapterPath}: ${message}`;
  if (tooOld || isRefusedLoad(response.status, message))
    throw ApplicationFailure.create({
      message: `refused: ${what}`,
      type: 'PublishRefused',
      nonRetryable: true,
      details: [{ endpoint, version: load.version, adapterPath: load.adapterPath, status: response.status, message }],
    });
  throw ApplicationFailure.retryable(what, 'PublishFailed');
}
