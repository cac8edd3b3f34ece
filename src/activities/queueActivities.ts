import type { ArtifactStore } from '../artifacts/store.js';
import type { TaskQueues } from '../config/taskQueues.js';
import {
  dialogueTurnActivities,
  gatedLlmCalls,
  optimizerQueueActivities,
  queuedPolicyActivities,
  queuedSimulatorActivities,
  rolloutQueueActivities,
  type EndpointGates,
} from './index.js';
import type { WorkflowStateOf } from './dialogueWatch.js';
import { heartbeating } from './heartbeating.js';
import { createPublisherActivities, type PublisherOptions } from './publisher.js';
import { storeTurnJournal } from '../journal/turnJournal.js';
import { type JournalledRun } from '../journal/turnJournalKeys.js';

/**
 * What a worker process hands its queues' activities: the artifact store, one gate per LLM
 * endpoint, and where a rollout with local activities says it is ending (its turn journal's sweeper).
 */
export interface QueueActivityDeps {
  store: ArtifactStore;
  gates: EndpointGates;
  runEnding?: (run: JournalledRun) => void;
  /** Describes a workflow through the worker's connection (the dialogue stream's watchdog). */
  workflowStateOf?: WorkflowStateOf;
  /** How long a local turn's confirmed claim lets its request leave (src/core/requestCheckLease.ts). */
  checkLeaseMs?: number;
}

/**
 * Each task queue's activities: the one place a worker looks them up. The LLM calls serve three
 * queues: their endpoint's own (one activity per call, heartbeating while it waits for a token
 * budget), the rollouts queue (local activities, `rollout.llmCalls: local`) and the turns queue
 * (inside a whole turn, `rollout.activityPer: turn`); the last two are bounded by this process's gates.
 */
export const QUEUE_ACTIVITIES = {
  rollouts: ({ store, gates, runEnding, workflowStateOf, checkLeaseMs }: QueueActivityDeps) => ({
    ...rolloutQueueActivities(store, runEnding, workflowStateOf),
    ...gatedLlmCalls(gates),
    ...dialogueTurnActivities(gates, storeTurnJournal(store), checkLeaseMs),
  }),
  policy: () => queuedPolicyActivities,
  simulator: () => queuedSimulatorActivities,
  turns: ({ gates }: Pick<QueueActivityDeps, 'gates'>) => dialogueTurnActivities(gates),
  optimizer: ({ store }: Pick<QueueActivityDeps, 'store'>) => optimizerQueueActivities(store),
  /**
   * One publish queue per vLLM replica (`publishQueueFor`), served by the publisher beside it; it
   * heartbeats, so a publisher killed mid-publish is noticed and the publish retried on its successor.
   */
  publish: (publisher: PublisherOptions) => heartbeating(createPublisherActivities(publisher)),
} satisfies Record<keyof TaskQueues | 'publish', (deps: never) => object>;
