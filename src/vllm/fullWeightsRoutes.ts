import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { vllmErrorMessage } from './load.js';
import { ownDeadlineFetch } from '../http/ownDeadlines.js';

/**
 * Full-weight publishing into vLLM through its RL routes (vLLM 0.32 started with
 * VLLM_SERVER_DEV_MODE=1): they sit at the server's root, beside /v1. vLLM holds one set of weights
 * at a time, labelled by a free-form weight version (`default` at launch).
 */
export function serverRoot(base: string): string {
  return base.replace(/\/$/, '').replace(/\/v1$/, '');
}

/** The label a reload in progress leaves on the weights: never a version a rollout expects. */
export function loadingLabel(version: string): string {
  return `loading ${version}`;
}

/** The version a `loading <version>` label names (a publish under way), or null for any other label. */
export function loadingOf(label: string | null): string | null {
  const prefix = loadingLabel('');
  return label?.startsWith(prefix) ? label.slice(prefix.length) : null;
}

/**
 * Every vLLM route a full-weights publish calls, with its method: `publishFullWeights` and the
 * transports (checkpointReload.ts, ncclTransfer.ts) reach vLLM only through `postRoute` and
 * `getRoute`, whose paths must be one of these, and test:vllm checks each against the installed
 * vLLM's `/openapi.json` (test/vllm/fullWeightsRoutes.test.ts), so an upgrade that drops or renames
 * one fails there rather than mid-run. The fake vLLM serves these same routes (test/support).
 */
export const FULL_WEIGHTS_ROUTES = [
  ['POST', '/pause'],
  ['POST', '/resume'],
  ['GET', '/is_paused'],
  ['GET', '/weight_info'],
  ['POST', '/update_weight_version'],
  ['POST', '/reset_prefix_cache'],
  ['POST', '/collective_rpc'],
  ['POST', '/shutdown_weight_transfer_engine'],
  ['POST', '/init_weight_transfer_engine'],
  ['POST', '/start_weight_update'],
  ['POST', '/update_weights'],
  ['POST', '/finish_weight_update'],
] as const;

type FullWeightsRoute = (typeof FULL_WEIGHTS_ROUTES)[number];
type RoutePath<M extends FullWeightsRoute[0]> = Extract<FullWeightsRoute, readonly [M, string]>[1];

const weightInfoSchema = z.object({ weight_version: z.string().nullable() });

export interface FullWeightsServer {
  /** The policy server's OpenAI base URL (…/v1). */
  base: string;
  headers: Record<string, string>;
  apiKeyEnv: string;
}

/** Why a route answered as it did, naming the server, the route and vLLM's message. */
function routeProblem(server: FullWeightsServer, route: string, status: number, body: string): string {
  const keyHint = status === 401 || status === 403 ? ` (check $${server.apiKeyEnv})` : '';
  const devHint =
    status === 404 ? ' (start vLLM 0.32 with VLLM_SERVER_DEV_MODE=1: scripts/vllm/start.sh --full-weights)' : '';
  return `vLLM ${serverRoot(server.base)}${route}: HTTP ${status}${keyHint}${devHint}: ${vllmErrorMessage(body)}`;
}

/**
 * `fetch` of one of vLLM's routes. A server that does not answer at all (down, restarting) fails as
 * any policy endpoint out of reach does (`LlmUnreachable`, retried): a rollout's call then waits for
 * it as for its chat completions, and the next replica is tried.
 */
async function reach(server: FullWeightsServer, route: string, init: RequestInit): Promise<Response> {
  try {
    return await ownDeadlineFetch(`${serverRoot(server.base)}${route}`, { ...init, headers: server.headers });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    throw ApplicationFailure.retryable(
      `vLLM ${serverRoot(server.base)}${route.replace(/\?.*$/, '')}: unreachable: ${cause}`,
      'LlmUnreachable',
    );
  }
}

/**
 * One call to an RL route. A 4xx (no such route: not in dev mode; a refused key; a bad request)
 * or a 500 (the worker raised: no weights at the path, shapes that do not fit) fails for good
 * (`PublishRefused`); 408, 429 and other 5xx are retried (`PublishFailed`).
 */
export async function postRoute(
  server: FullWeightsServer,
  route: RoutePath<'POST'> | `${RoutePath<'POST'>}?${string}`,
  body: unknown,
  what: string,
): Promise<string> {
  const response = await reach(server, route, {
    method: 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(600_000),
  });
  const text = await response.text();
  if (response.ok) return text;
  const problem = `${what}: ${routeProblem(server, route.replace(/\?.*$/, ''), response.status, text)}`;
  const status = response.status;
  if (status !== 408 && status !== 429 && status >= 400 && status <= 500)
    throw ApplicationFailure.create({
      message: `refused: ${problem}`,
      type: 'PublishRefused',
      nonRetryable: true,
      details: [{ route, status, message: vllmErrorMessage(text) }],
    });
  throw ApplicationFailure.retryable(problem, 'PublishFailed');
}

/** A GET of one of vLLM's routes, its JSON answer checked against `schema`. */
async function getRoute<T>(server: FullWeightsServer, route: RoutePath<'GET'>, schema: z.ZodType<T>): Promise<T> {
  const response = await reach(server, route, { signal: AbortSignal.timeout(60_000) });
  const text = await response.text();
  if (!response.ok) {
    const problem = routeProblem(server, route, response.status, text);
    if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429)
      throw ApplicationFailure.nonRetryable(`refused: ${problem}`, 'PublishRefused');
    throw ApplicationFailure.retryable(problem, 'PublishFailed');
  }
  let json: unknown;
  try {
    json = JSON.parse(text || 'null');
  } catch {
    json = undefined;
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw ApplicationFailure.nonRetryable(`vLLM ${route} answered ${text.slice(0, 200)}`, 'PublishRefused');
  return parsed.data;
}

/** The weight version vLLM serves now (`GET /weight_info`). */
export async function servedWeightVersion(server: FullWeightsServer): Promise<string | null> {
  return (await getRoute(server, '/weight_info', weightInfoSchema)).weight_version;
}

const pausedSchema = z.object({ is_paused: z.boolean() });

/**
 * Whether vLLM holds new requests (`GET /is_paused`). `/weight_info` answers the label whether paused
 * or not, so a publish whose `/resume` failed reads as done there while every call waits.
 */
export async function serverPaused(server: FullWeightsServer): Promise<boolean> {
  return (await getRoute(server, '/is_paused', pausedSchema)).is_paused;
}
