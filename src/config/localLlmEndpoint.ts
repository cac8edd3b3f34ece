import type { AttuneConfig } from './schema.js';

/** The variable the local model server (`localllm/main.ts`) and `attune` read the server's token from. */
export const LOCAL_LLM_TOKEN_ENV = 'LOCAL_LLM_TOKEN';

/** Whether an endpoint's base URL is the embedded local model server's (loopback, its port). */
export function pointsAtLocalServer(baseURL: string, port: number): boolean {
  try {
    const url = new URL(baseURL);
    return ['127.0.0.1', 'localhost'].includes(url.hostname) && Number(url.port) === port;
  } catch {
    return false;
  }
}

/**
 * The variable holding an endpoint's key: the local model server's token variable when the
 * endpoint is that server and a token is configured, so Attune's calls carry the token it checks.
 */
export function endpointKeyEnv(config: AttuneConfig, baseURL: string, apiKeyEnv: string): string {
  const { tokenEnv, port } = config.localLlm;
  return tokenEnv !== undefined && pointsAtLocalServer(baseURL, port) ? tokenEnv : apiKeyEnv;
}
