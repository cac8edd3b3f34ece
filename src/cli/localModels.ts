import { pointsAtLocalServer } from '../config/localLlmEndpoint.js';
import type { AttuneConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { findSmolLm2Gguf } from '../localllm/modelPath.js';
import { startLocalLlmServer } from '../localllm/server.js';
import { REPO_ROOT } from '../paths.js';

export interface LocalModels {
  /** Base URL of the local model server this process started, if any. */
  url: string | null;
  close(): Promise<void>;
}

async function answers(baseURL: string): Promise<boolean> {
  try {
    const response = await fetch(`${baseURL.replace(/\/v1\/?$/, '')}/health`, { signal: AbortSignal.timeout(1000) });
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * The embedded default: when the policy or the simulator points at the local model port and
 * nothing serves it yet, start the node-llama-cpp server on SmolLM2-135M-Instruct in this process.
 */
export async function ensureLocalModels(config: AttuneConfig, log: Logger): Promise<LocalModels> {
  const port = config.localLlm.port;
  const wanted = [config.policy.baseURL, config.simulator.baseURL].filter((url) => pointsAtLocalServer(url, port));
  if (wanted.length === 0 || (await answers(wanted[0]!))) return { url: null, close: async () => {} };
  const modelPath = config.localLlm.modelPath ?? findSmolLm2Gguf(REPO_ROOT);
  const { tokenEnv } = config.localLlm;
  const token = tokenEnv !== undefined ? (process.env[tokenEnv] ?? '') : undefined;
  if (token === '')
    throw new Error(`localLlm.tokenEnv names ${tokenEnv}, which is not set: set it or remove localLlm.tokenEnv`);
  log.info('starting the local model server', { port, modelPath, parallel: config.localLlm.parallel });
  const server = await startLocalLlmServer({
    modelPath,
    port,
    parallel: config.localLlm.parallel,
    maxQueued: config.localLlm.maxQueued,
    requestTimeoutMs: config.localLlm.requestTimeoutMs,
    ...(token !== undefined ? { token } : {}),
    modelName: 'smollm2-135m-instruct',
  });
  log.info('local model server ready', { url: server.url, loadMs: server.loadMs });
  return { url: server.url, close: () => server.close() };
}
