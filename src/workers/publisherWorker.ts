import { Worker, type State } from '@temporalio/worker';
import type { PublisherOptions } from '../activities/publisher.js';
import { keepServedWeights } from '../activities/replicaFullWeights.js';
import { QUEUE_ACTIVITIES } from '../activities/queueActivities.js';
import { LIMITS } from '../config/limits.js';
import { publishQueueFor } from '../config/taskQueues.js';
import type { AttuneConfig } from '../config/schema.js';
import { commonWorkerOptions, type LlmIoWorkerOptions } from './llmIoWorkers.js';

export interface PublisherWorkerOptions extends Omit<LlmIoWorkerOptions, 'workflowBundle'> {
  /** The replica this worker publishes to (a name of `policy.replicas`, or a new one with `policyBaseURL`). */
  replica: string;
  /** Its vLLM's OpenAI base URL (…/v1); default: the replica's baseURL in the config. */
  policyBaseURL?: string;
  /** Where fetched adapters are written; default `<home>/adapters`. */
  adapterDir: string;
  /** How often the vLLM is checked for the full weights last published (default LIMITS.replicaWeightsCheckMs). */
  weightsCheckMs?: number;
}

/** A worker in these states runs no more activities: its vLLM's keeper stops with it. */
const ENDED: ReadonlySet<State> = new Set(['STOPPING', 'DRAINING', 'DRAINED', 'STOPPED', 'FAILED']);

/** The replica a publisher serves, with the queue it polls and the vLLM it loads into. */
export function publisherTarget(
  config: AttuneConfig,
  replica: string,
  policyBaseURL: string | undefined,
): { taskQueue: string; policyBaseURL: string } {
  const configured = config.policy.replicas?.find((r) => r.name === replica);
  const url = policyBaseURL ?? configured?.baseURL;
  if (!url)
    throw new Error(
      `publisher: replica "${replica}" is not in policy.replicas (${(config.policy.replicas ?? []).map((r) => r.name).join(', ') || 'none'}); name one, or give --policy-url`,
    );
  return {
    taskQueue: configured?.publishTaskQueue ?? publishQueueFor(config.temporal.taskQueuePrefix, replica),
    policyBaseURL: /\/v1\/?$/.test(url) ? url.replace(/\/$/, '') : `${url.replace(/\/$/, '')}/v1`,
  };
}

/**
 * A vLLM replica's publisher: the publish activity of that replica's queue, a few at a time (one step's
 * publish, or a resume's). Runs beside the vLLM it loads into, on the replica's host, and while it
 * runs keeps that vLLM on the full weights it last published (keepServedWeights: a vLLM restarted
 * mid-step is reloaded within the step).
 */
export async function createPublisherWorker(options: PublisherWorkerOptions): Promise<Worker> {
  const target = publisherTarget(options.config, options.replica, options.policyBaseURL);
  const publisher: PublisherOptions = {
    policyBaseURL: target.policyBaseURL,
    apiKeyEnv: options.config.policy.apiKeyEnv,
    adapterDir: options.adapterDir,
  };
  const worker = await Worker.create({
    ...commonWorkerOptions(options, LIMITS.shutdownGraceTimeMs),
    taskQueue: target.taskQueue,
    activities: QUEUE_ACTIVITIES.publish(publisher),
    maxConcurrentActivityTaskExecutions: 4,
  });
  keepServedWeights({
    base: publisher.policyBaseURL,
    apiKeyEnv: publisher.apiKeyEnv,
    adapterDir: publisher.adapterDir,
    everyMs: options.weightsCheckMs ?? LIMITS.replicaWeightsCheckMs,
    stopWhen: () => ENDED.has(worker.getState()),
  });
  return worker;
}
