import type { z } from 'zod';
import { DEFAULT_DIFFICULTY } from '../core/difficulty.js';
import { endpointCallSchema, rolloutSettingsSchema, type RolloutSettings } from '../core/rolloutSettingsSchema.js';
import { artifactStoreName } from './artifactsSchema.js';
import type { DialogueSettings } from './dialogueGroup.js';
import { LOCAL_LLM_URL, type AttuneConfig } from './schema.js';
import { LIMITS } from './limits.js';
import { endpointKeyEnv } from './localLlmEndpoint.js';
import { taskQueuesFor } from './taskQueues.js';

/**
 * Characters per analysis text field for the embedded local model server. The analysis call then
 * asks for the tokens a complete object can take (see analysisTokenBudget.ts): about 1,600 here,
 * which leaves most of the 8k context to the dialogue.
 */
export const LOCAL_ANALYSIS_MAX_CHARS = 80;

/**
 * The variable holding the policy endpoint's key. A policy served by the trainer itself
 * (`training.publish.mode: trainer`, evaluations of `run@step`) is reached with the trainer's token,
 * not the policy server's key; the embedded local model server with its token variable.
 */
export function policyApiKeyEnv(config: AttuneConfig): string {
  const trainerV1 = `${config.trainer.url.replace(/\/$/, '')}/v1`;
  return config.policy.baseURL.replace(/\/$/, '') === trainerV1
    ? config.trainer.tokenEnv
    : endpointKeyEnv(config, config.policy.baseURL, config.policy.apiKeyEnv);
}

/** Whether the policy endpoint is asked for sampled token ids and log-probs (`policy.logprobs`). */
export function policyLogprobs(config: AttuneConfig): boolean {
  if (config.policy.logprobs !== 'auto') return config.policy.logprobs === 'on';
  const trainerV1 = `${config.trainer.url.replace(/\/$/, '')}/v1`;
  return config.policy.baseURL.replace(/\/$/, '') === trainerV1 || config.training.publish.mode === 'vllm';
}

const simulatorCallSchema = rolloutSettingsSchema.shape.simulator;

/**
 * The fields of a config endpoint that its call carries as they are: the ones both schemas name,
 * less those the config words differently (the call's value is derived below), unset ones left out.
 */
function callFields(endpoint: object, call: z.ZodObject): Record<string, unknown> {
  const derived = new Set(['apiKeyEnv', 'taskQueue', 'logprobs', 'analysisMaxChars', 'replicas', 'difficulty']);
  return Object.fromEntries(
    Object.entries(endpoint).filter(([key, value]) => key in call.shape && !derived.has(key) && value !== undefined),
  );
}

/**
 * The workflow-facing view of the config: endpoints without secrets, plus the task queue of each.
 * `dialogue` is a section's dialogue group (default: `rollout.dialogue`), carried as it is.
 */
export function rolloutSettingsFromConfig(
  config: AttuneConfig,
  dialogue: DialogueSettings = config.rollout.dialogue,
): RolloutSettings {
  const { policy, simulator, rollout } = config;
  const queues = taskQueuesFor(config.temporal.taskQueuePrefix);
  // A 135M model writes until its token limit unless the schema stops it.
  const localUrl = `http://127.0.0.1:${config.localLlm.port}/v1`;
  const analysisMaxChars =
    simulator.analysisMaxChars ??
    ([localUrl, LOCAL_LLM_URL].includes(simulator.baseURL) ? LOCAL_ANALYSIS_MAX_CHARS : undefined);
  return rolloutSettingsSchema.parse({
    artifactsTaskQueue: queues.rollouts,
    artifactStore: { name: artifactStoreName(config.artifacts, config.home), retry: config.artifacts.retry },
    turnsTaskQueue: queues.turns,
    llmCalls: rollout.llmCalls,
    activityPer: rollout.activityPer,
    workflowTaskTimeoutMs: rolloutWorkflowTaskTimeoutMs(rollout),
    ...dialogue,
    maxWaitMinutes: rollout.maxWaitMinutes,
    ...(rollout.policySystemPrompt !== undefined ? { policySystemPrompt: rollout.policySystemPrompt } : {}),
    policy: {
      ...callFields(policy, endpointCallSchema),
      apiKeyEnv: policyApiKeyEnv(config),
      taskQueue: queues.policy,
      ...(policyLogprobs(config) ? { logprobs: true } : {}),
    },
    simulator: {
      ...callFields(simulator, simulatorCallSchema),
      apiKeyEnv: endpointKeyEnv(config, simulator.baseURL, simulator.apiKeyEnv),
      taskQueue: queues.simulator,
      ...(analysisMaxChars !== undefined ? { analysisMaxChars } : {}),
      // `normal` is no field, as in the inputs of versions before levels (withDifficulty).
      ...(simulator.difficulty !== DEFAULT_DIFFICULTY ? { difficulty: simulator.difficulty } : {}),
    },
  });
}

/**
 * The rollouts' workflow-task timeout: the configured one; else 60 s with local calls, where a task
 * stays open while they run; else none (Temporal's 10 s).
 */
export function rolloutWorkflowTaskTimeoutMs(rollout: AttuneConfig['rollout']): number | undefined {
  return (
    rollout.workflowTaskTimeoutMs ?? (rollout.llmCalls === 'local' ? LIMITS.localCallsWorkflowTaskTimeoutMs : undefined)
  );
}
