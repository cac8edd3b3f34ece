import type { ArtifactStore } from '../artifacts/store.js';
import { createArtifactActivities } from './artifacts.js';
import { createCapabilityActivities } from './capability.js';
import { createDialogueTurnActivities } from './dialogueTurn.js';
import { createDialogueWatchActivities, type WorkflowStateOf } from './dialogueWatch.js';
import type { TurnJournal } from '../journal/turnJournal.js';
import type { JournalledRun } from '../journal/turnJournalKeys.js';
import { EndpointGate, gated, type EndpointLimits } from './endpointLimits.js';
import { createEvaluationActivities } from './evaluationReports.js';
import { heartbeating } from './heartbeating.js';
import { generatePolicyTurn } from './policy.js';
import { loadScenario } from './scenarios.js';
import { analyzeAssistantReply, writeUserMessage } from './simulator.js';
import { latestPolicyVersion } from '../trainer/trainerClient.js';
import { createRunBookkeepingActivities } from './runBookkeeping.js';
import { createOptimizerActivities } from './optimizer.js';
import { describeServedModel } from './servedModel.js';
import { createTrackingActivities } from './tracking/trackStep.js';

export const policyActivities = { generatePolicyTurn };
export const simulatorActivities = { analyzeAssistantReply, writeUserMessage };
/** The calls as the endpoints' queue workers run them: one activity per call, heartbeating while it waits. */
export const queuedPolicyActivities = heartbeating(policyActivities);
export const queuedSimulatorActivities = heartbeating(simulatorActivities);

/** Activities of the rollouts queue: small local I/O next to the workflows. */
export function rolloutQueueActivities(
  store: ArtifactStore,
  runEnding?: (run: JournalledRun) => void,
  workflowStateOf?: WorkflowStateOf,
) {
  return {
    ...createDialogueWatchActivities(workflowStateOf),
    ...createArtifactActivities(store, runEnding),
    ...createEvaluationActivities(store),
    ...createCapabilityActivities(store),
    ...createRunBookkeepingActivities(store),
    ...createTrackingActivities(store),
    loadScenario,
    latestPolicyVersion,
    describeServedModel,
  };
}

export interface EndpointGates {
  policy: EndpointGate;
  simulator: EndpointGate;
}

/** One gate per endpoint for a worker process: local LLM activities and turn activities share them. */
export function endpointGates(limits: { policy: EndpointLimits; simulator: EndpointLimits }): EndpointGates {
  return { policy: new EndpointGate(limits.policy), simulator: new EndpointGate(limits.simulator) };
}

/**
 * The LLM calls as the worker makes them outside their endpoints' task queues (local activities,
 * `rollout.llmCalls: local`, and the calls inside turn activities): the same functions, bounded per
 * endpoint in this process.
 */
export function gatedLlmCalls(gates: EndpointGates) {
  return {
    ...gated(policyActivities, gates.policy),
    ...gated(simulatorActivities, gates.simulator),
  };
}

/**
 * `playDialogueTurn` (`rollout.activityPer: turn`), its calls bounded by `gates`; run as a local
 * activity, it records its finished calls in `journal` (the rollout worker's artifact store).
 */
export function dialogueTurnActivities(gates: EndpointGates, journal?: TurnJournal, checkLeaseMs?: number) {
  return createDialogueTurnActivities(gatedLlmCalls(gates), journal, checkLeaseMs);
}

export type PolicyActivities = typeof policyActivities;
export type SimulatorActivities = typeof simulatorActivities;
export type { DialogueTurnActivities } from './dialogueTurn.js';
export type RolloutQueueActivities = ReturnType<typeof rolloutQueueActivities>;
export type ArtifactActivities = RolloutQueueActivities;

/** Activities of the optimizer queue: one at a time per GPU host. */
export function optimizerQueueActivities(store: ArtifactStore) {
  return createOptimizerActivities(store);
}
export type OptimizerQueueActivities = ReturnType<typeof optimizerQueueActivities>;
