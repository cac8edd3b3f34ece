import type { ArtifactStore } from '../artifacts/store.js';
import { createArtifactActivities } from './artifacts.js';
import { EndpointGate, gated, type EndpointLimits } from './endpointLimits.js';
import { createEvaluationActivities } from './evaluations.js';
import { generatePolicyTurn } from './policy.js';
import { loadScenario } from './scenarios.js';
import { analyzeAssistantReply, writeUserMessage } from './simulator.js';
import { latestPolicyVersion } from './trainerClient.js';
import { createRunBookkeepingActivities } from './runBookkeeping.js';
import { createOptimizerActivities } from './optimizer.js';

export const policyActivities = { generatePolicyTurn };
export const simulatorActivities = { analyzeAssistantReply, writeUserMessage };

/** Activities of the rollouts queue: small local I/O next to the workflows. */
export function rolloutQueueActivities(store: ArtifactStore) {
  return { ...createArtifactActivities(store), ...createEvaluationActivities(store), ...createRunBookkeepingActivities(store), loadScenario, latestPolicyVersion };
}

/**
 * The LLM activities as the rollout worker runs them when workflows ask for local activities
 * (`rollout.llmCalls: local`): the same functions, bounded per endpoint in this process.
 */
export function localLlmActivities(limits: { policy: EndpointLimits; simulator: EndpointLimits }) {
  return {
    ...gated(policyActivities, new EndpointGate(limits.policy)),
    ...gated(simulatorActivities, new EndpointGate(limits.simulator)),
  };
}

export type PolicyActivities = typeof policyActivities;
export type SimulatorActivities = typeof simulatorActivities;
export type RolloutQueueActivities = ReturnType<typeof rolloutQueueActivities>;
export type ArtifactActivities = RolloutQueueActivities;

/** Activities of the optimizer queue: one at a time per GPU host. */
export function optimizerQueueActivities(store: ArtifactStore) {
  return createOptimizerActivities(store);
}
export type OptimizerQueueActivities = ReturnType<typeof optimizerQueueActivities>;
