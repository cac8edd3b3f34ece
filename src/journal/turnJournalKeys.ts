import { isValidArtifactKey } from '../core/names.js';

/** The keys of the turn journal (src/journal/turnJournal.ts) in the artifact store: pure, shared with its sweeper. */

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
const CLOSED_MARKER = /^journals\/(.+)\/([^/]+)\/closed\.json$/;

/** Whether `key` is one turn's record (not a marker). */
export const isTurnRecordKey = (key: string): boolean => TURN_RECORD.test(key);

/**
 * The marker a run's journal leaves when it is removed (src/journal/turnJournalSweeper.ts): an
 * attempt that finds no record of its turn and this marker belongs to a run that has ended.
 */
export const turnJournalClosedKey = (execution: JournalledRun) => `${turnJournalRunPrefix(execution)}closed.json`;

/** A run-level file of the journal (the closed marker, the run's fence) beside the turn record `key`. */
export const besideTurn = (key: string, name: 'closed.json' | 'fence.json') => key.replace(/turn-\d+\.json$/, name);
export const closedMarkerOf = (key: string) => besideTurn(key, 'closed.json');

/** The runs whose journal is only a closed marker now, among `keys` (a listing of `journals/`). */
export function closedJournalRuns(keys: readonly string[]): JournalledRun[] {
  const live = new Set(journalledRuns(keys).map(turnJournalRunPrefix));
  return keys.flatMap((key) => {
    const match = CLOSED_MARKER.exec(key);
    if (!match) return [];
    const run = { workflowId: workflowIdOf(match[1]!), runId: match[2]! };
    return live.has(turnJournalRunPrefix(run)) ? [] : [run];
  });
}

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
