import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import type { EndpointCall } from '../core/rolloutSettingsSchema.js';
import { createLogger } from '../log.js';
import { TrainerHttpError, trainerRequest, type TrainerEndpoint } from '../trainer/trainerClient.js';
import { versionStep } from './adapters.js';
import { loadLoraAdapter } from './load.js';

const log = createLogger({ component: 'republish' });

const storedStepSchema = z
  .object({
    checkpoint: z.object({ export_path: z.string().nullable().optional() }).passthrough().nullable().optional(),
  })
  .passthrough();

export interface RepublishInput {
  trainer: TrainerEndpoint;
  runName: string;
  step: number;
  /** The vLLM server's OpenAI base URL (…/v1). */
  policyBaseURL: string;
  apiKeyEnv: string;
}

/**
 * Loads `runName@step` into vLLM again, in place, from the adapter the trainer exported for that
 * step (its stored step result): after a vLLM restart lost it, or before `--continue` samples it.
 * A step the trainer has no adapter for fails for good (`PolicyVersionMissing`).
 */
export async function republishVersion(input: RepublishInput): Promise<void> {
  const version = `${input.runName}@${input.step}`;
  const exportPath = await exportPathOf(input);
  const key = process.env[input.apiKeyEnv];
  await loadLoraAdapter({
    base: input.policyBaseURL.replace(/\/$/, ''),
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    version,
    adapterPath: exportPath,
    apiKeyEnv: input.apiKeyEnv,
  });
  log.info('version published again from the trainer checkpoint', { version, exportPath });
}

const runStateSchema = z
  .object({
    checkpoints: z.array(z.object({ step: z.number(), export_path: z.string().nullable().optional() }).passthrough()),
  })
  .passthrough();

/**
 * Where the trainer exported `runName@step`: its stored step result, or for step 0 (the base
 * model a full fine-tuning run starts from) the run's own record of its checkpoints. A step the
 * trainer has nothing for fails for good (`PolicyVersionMissing`).
 */
export async function exportPathOf(input: Pick<RepublishInput, 'trainer' | 'runName' | 'step'>): Promise<string> {
  const version = `${input.runName}@${input.step}`;
  const run = `/v1/runs/${encodeURIComponent(input.runName)}`;
  let exportPath: string | null | undefined;
  try {
    if (input.step === 0) {
      const { json } = await trainerRequest(input.trainer, 'GET', run);
      exportPath = runStateSchema.parse(json).checkpoints.find((c) => c.step === 0)?.export_path;
    } else {
      const { json } = await trainerRequest(input.trainer, 'GET', `${run}/steps/${input.step}`);
      exportPath = storedStepSchema.parse(json).checkpoint?.export_path;
    }
  } catch (error) {
    if (error instanceof TrainerHttpError && error.status === 404)
      throw ApplicationFailure.nonRetryable(
        `${version} cannot be published again: ${error.message}`,
        'PolicyVersionMissing',
      );
    throw error;
  }
  if (!exportPath)
    throw ApplicationFailure.nonRetryable(
      `${version} cannot be published again: the trainer exported no weights for step ${input.step}`,
      'PolicyVersionMissing',
    );
  return exportPath;
}

/** vLLM's answer for a model it does not serve: HTTP 404 "The model `X` does not exist." */
export function isModelMissing(error: unknown): boolean {
  return (
    error instanceof ApplicationFailure &&
    error.type === 'LlmRequestRejected' &&
    /HTTP 404/.test(error.message) &&
    /does not exist/i.test(error.message)
  );
}

/**
 * Runs `call`; when vLLM answers that the endpoint's version `run@step` does not exist and the
 * endpoint says where to reload it from, publishes it again from the trainer's checkpoint and
 * makes the call once more (a restarted vLLM lost its runtime-loaded adapters).
 */
export async function withVersionReload<T>(endpoint: EndpointCall, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const from = endpoint.reloadFrom;
    const step = from ? versionStep(from.runName, endpoint.model) : null;
    if (!from || step === null || !isModelMissing(error)) throw error;
    log.warn('policy version missing on the server; publishing it again', { model: endpoint.model });
    await republishVersion({
      trainer: { url: from.trainerUrl, tokenEnv: from.tokenEnv },
      runName: from.runName,
      step,
      policyBaseURL: endpoint.baseURL,
      apiKeyEnv: endpoint.apiKeyEnv,
    });
    return await call();
  }
}
