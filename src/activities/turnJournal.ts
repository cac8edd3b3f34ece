import type { ArtifactStore } from '../artifacts/store.js';
import { isValidArtifactKey } from '../core/names.js';
import { artifactFailure } from './artifactFailure.js';

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
}

/** Marks a workflow id written in base64url in a journal key (see journalIdPart). */
const ENCODED_ID = '=b64=';

/**
 * A workflow id as it stands in journal keys: itself when it is a valid key already (so every journal
 * written before this encoding keeps its key), otherwise base64url behind a marker. Workflow ids may
 * hold any character (a schedule suffixes its firing time, with colons); keys may not.
 */
export function journalIdPart(workflowId: string): string {
  return isValidArtifactKey(workflowId) && !workflowId.startsWith(ENCODED_ID)
    ? workflowId
    : `${ENCODED_ID}${Buffer.from(workflowId, 'utf8').toString('base64url')}`;
}

/** The workflow id that journalIdPart wrote. */
function workflowIdOf(part: string): string {
  return part.startsWith(ENCODED_ID) ? Buffer.from(part.slice(ENCODED_ID.length), 'base64url').toString('utf8') : part;
}

/** The store prefix of one workflow's journal. */
export const turnJournalPrefix = (workflowId: string) => `journals/${journalIdPart(workflowId)}/`;

/** A workflow run, as the journal's keys name it. */
export interface JournalledRun {
  workflowId: string;
  runId: string;
}

/** The store prefix of one workflow run's journal: every turn record of that run. */
export const turnJournalRunPrefix = (execution: JournalledRun) =>
  `${turnJournalPrefix(execution.workflowId)}${execution.runId}/`;

/**
 * One turn's record: the workflow's run id keeps a new workflow that re-uses an old id from
 * reading the old one's calls.
 */
export const turnJournalKey = (execution: JournalledRun, turn: number) =>
  `${turnJournalRunPrefix(execution)}turn-${turn}.json`;

const TURN_RECORD = /^journals\/(.+)\/([^/]+)\/turn-\d+\.json$/;

/** The runs that have a journal among `keys` (a listing of `journals/`), each once; other keys are ignored. */
export function journalledRuns(keys: readonly string[]): JournalledRun[] {
  const runs = new Map<string, JournalledRun>();
  for (const key of keys) {
    const match = TURN_RECORD.exec(key);
    if (!match) continue;
    const run = { workflowId: workflowIdOf(match[1]!), runId: match[2]! };
    runs.set(turnJournalRunPrefix(run), run);
  }
  return [...runs.values()];
}

/**
 * The journal in the run's artifact store (a local directory or S3: wherever the next worker can read
 * it). Its failures are the store's, as a transcript write's are (artifactFailure): a full disk fails
 * the turn naming the store, so the run waits for the operator instead of failing its dialogues.
 */
export function storeTurnJournal(store: ArtifactStore): TurnJournal {
  const asStoreFailure = async <T>(key: string, io: () => Promise<T>): Promise<T> => {
    try {
      return await io();
    } catch (error) {
      throw artifactFailure(error, store.locate(key));
    }
  };
  return {
    read: (key) =>
      asStoreFailure(key, async () => {
        const text = await store.getText(key);
        return text === null ? null : (JSON.parse(text) as unknown);
      }),
    write: (key, finished) =>
      asStoreFailure(key, async () => {
        await store.putJson(key, finished);
      }),
  };
}
