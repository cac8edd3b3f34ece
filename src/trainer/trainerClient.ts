/** The trainer's HTTP client: the optimizer activities and the operator's client (run status) both call it. */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { ownDeadlineFetch } from '../http/ownDeadlines.js';

export interface TrainerEndpoint {
  url: string;
  /** Variable holding the bearer token; read here, never passed through workflows. */
  tokenEnv: string;
}

const runStateSchema = z.object({ run_id: z.string(), step: z.number().int().min(0) }).passthrough();
export type TrainerRunState = z.infer<typeof runStateSchema>;

const errorBodySchema = z.object({ error: z.object({ message: z.string() }).passthrough() }).passthrough();

export class TrainerHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'TrainerHttpError';
  }
}

/** JSON over HTTP to the trainer service, with its errors turned into messages that name the call. */
export async function trainerRequest(
  endpoint: TrainerEndpoint,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  timeoutMs = 60_000,
  signal?: AbortSignal,
): Promise<{ status: number; json: unknown }> {
  const token = process.env[endpoint.tokenEnv];
  const url = `${endpoint.url.replace(/\/$/, '')}${path}`;
  let response: Response;
  try {
    response = await ownDeadlineFetch(
      url,
      {
        method,
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
      },
    );
  } catch (error) {
    throw ApplicationFailure.retryable(
      `trainer ${method} ${url}: unreachable (${(error as Error).message})`,
      'TrainerUnreachable',
    );
  }
  const text = await response.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  if (response.status >= 400) {
    const parsed = errorBodySchema.safeParse(json);
    const detail = parsed.success ? parsed.data.error.message : text.slice(0, 500);
    throw new TrainerHttpError(response.status, `trainer ${method} ${url}: HTTP ${response.status}: ${detail}`, json);
  }
  return { status: response.status, json };
}

export async function getTrainerRun(endpoint: TrainerEndpoint, runId: string): Promise<TrainerRunState | null> {
  try {
    const { json } = await trainerRequest(endpoint, 'GET', `/v1/runs/${encodeURIComponent(runId)}`);
    const parsed = runStateSchema.safeParse(json);
    if (!parsed.success)
      throw ApplicationFailure.nonRetryable(
        `trainer GET /v1/runs/${runId}: unexpected body ${JSON.stringify(json).slice(0, 300)}`,
        'TrainerBadResponse',
      );
    return parsed.data;
  } catch (error) {
    if (error instanceof TrainerHttpError && error.status === 404) return null;
    if (error instanceof TrainerHttpError) {
      throw error.status === 401 || error.status === 403
        ? ApplicationFailure.nonRetryable(error.message, 'TrainerRejected')
        : ApplicationFailure.retryable(error.message, 'TrainerError');
    }
    throw error;
  }
}

/** `run@step` of the run's last applied step: what a scheduled evaluation of a run evaluates. */
export async function latestPolicyVersion(input: { trainer: TrainerEndpoint; runName: string }): Promise<string> {
  const state = await getTrainerRun(input.trainer, input.runName);
  if (!state)
    throw ApplicationFailure.nonRetryable(`trainer ${input.trainer.url} has no run "${input.runName}"`, 'UnknownRun');
  return `${input.runName}@${state.step}`;
}
