import type { ArtifactStore } from '../artifacts/store.js';

/**
 * Where a local turn activity keeps the calls it has finished, so that a turn played again after
 * its worker died does not make them again. A local activity cannot heartbeat, and its result
 * reaches the history only when the workflow task completes, which may be several turns later; the
 * journal holds each call's result from the moment it returns.
 */
export interface TurnJournal {
  /** The finished calls recorded for this turn, or null when there are none. */
  read(key: string): Promise<unknown>;
  /** Replaces the turn's record with `finished`: every call finished so far. */
  write(key: string, finished: unknown): Promise<void>;
  /** Drops every turn's record of one workflow (its dialogue is done). */
  forget(workflowId: string): Promise<void>;
}

/** The store prefix of one workflow's journal. */
export const turnJournalPrefix = (workflowId: string) => `journals/${workflowId}/`;

/**
 * One turn's record: the workflow's run id keeps a new workflow that re-uses an old id from
 * reading the old one's calls.
 */
export const turnJournalKey = (execution: { workflowId: string; runId: string }, turn: number) =>
  `${turnJournalPrefix(execution.workflowId)}${execution.runId}/turn-${turn}.json`;

/** The journal in the run's artifact store (a local directory or S3: wherever the next worker can read it). */
export function storeTurnJournal(store: ArtifactStore): TurnJournal {
  return {
    read: async (key) => {
      const text = await store.getText(key);
      return text === null ? null : (JSON.parse(text) as unknown);
    },
    write: async (key, finished) => {
      await store.putJson(key, finished);
    },
    forget: (workflowId) => store.remove(turnJournalPrefix(workflowId)),
  };
}
