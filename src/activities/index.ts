import type { ArtifactStore } from '../artifacts/store.js';
import { createArtifactActivities } from './artifacts.js';
import { generatePolicyTurn } from './policy.js';
import { analyzeAssistantReply, writeUserMessage } from './simulator.js';

export const policyActivities = { generatePolicyTurn };
export const simulatorActivities = { analyzeAssistantReply, writeUserMessage };
export function rolloutQueueActivities(store: ArtifactStore) {
  return createArtifactActivities(store);
}

export type PolicyActivities = typeof policyActivities;
export type SimulatorActivities = typeof simulatorActivities;
export type ArtifactActivities = ReturnType<typeof createArtifactActivities>;
