import { z } from 'zod';
import type { EndpointCall } from '../core/rolloutSettingsSchema.js';
import type { ServedModel } from '../core/servedModel.js';

const modelListSchema = z.object({
  data: z.array(z.object({ id: z.string(), root: z.string().nullish(), owned_by: z.string().nullish() }).loose()),
});

/** How long the listing may take: it is metadata, and must not hold up the evaluation it describes. */
const LIST_TIMEOUT_MS = 10_000;

/**
 * What the endpoint lists under the configured model name. Never fails: an endpoint that cannot tell
 * is recorded as such, and the evaluation goes on (its scores do not depend on the listing).
 */
export async function describeServedModel(
  endpoint: Pick<EndpointCall, 'baseURL' | 'model' | 'apiKeyEnv'>,
): Promise<ServedModel> {
  const url = `${endpoint.baseURL.replace(/\/$/, '')}/models`;
  const apiKey = process.env[endpoint.apiKeyEnv] ?? '';
  let body: unknown;
  try {
    const response = await fetch(url, {
      headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
      signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
    });
    if (!response.ok) return { unavailable: `GET ${url} answered HTTP ${response.status}` };
    body = await response.json();
  } catch (error) {
    return { unavailable: `GET ${url} failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = modelListSchema.safeParse(body);
  if (!parsed.success) return { unavailable: `GET ${url} did not answer a model list` };
  const found = parsed.data.data.find((m) => m.id === endpoint.model);
  if (!found)
    return { unavailable: `"${endpoint.model}" is not among the ${parsed.data.data.length} model(s) ${url} lists` };
  return { id: found.id, root: found.root ?? null, ownedBy: found.owned_by ?? null };
}
