import { Context } from '@temporalio/activity';
import { transcriptKey, transcriptPartKey, transcriptPartsPrefix } from '../artifacts/keys.js';
import { ArtifactNotFoundError, type ArtifactStore } from '../artifacts/store.js';
import type { Transcript } from '../core/transcript.js';
import { artifactFailure } from './artifactFailure.js';
import { recordRollout } from './attuneMetrics.js';
import { turnJournalPrefix, type JournalledRun } from '../journal/turnJournalKeys.js';
import { joinTranscript, type TranscriptPart, type TranscriptTail } from '../core/transcriptParts.js';

/**
 * `runEnding`: told by the final transcript write of a rollout whose activities are local (the
 * rollout closes next), so its turn journal can go once it has (src/journal/turnJournalSweeper.ts).
 */
export function createArtifactActivities(store: ArtifactStore, runEnding?: (run: JournalledRun) => void) {
  const ending = () => {
    if (!runEnding) return; // also outside an activity: the benchmark's plain loop calls these directly
    const { isLocal, workflowExecution } = Context.current().info;
    if (isLocal && workflowExecution) runEnding(workflowExecution);
  };
  return {
    /**
     * Removes the calling rollout's turn journal: its turns are in its history. Idempotent. Rollouts
     * started before TURN_JOURNAL_SWEPT_PATCH call it (see rollout.ts); newer ones leave the journal
     * to the worker's sweeper.
     */
    async forgetTurnJournal(): Promise<void> {
      const execution = Context.current().info.workflowExecution;
      if (!execution) return;
      try {
        await store.remove(turnJournalPrefix(execution.workflowId));
      } catch (error) {
        throw artifactFailure(error, store.locate(turnJournalPrefix(execution.workflowId)));
      }
    },

    /** Idempotent: the key depends only on the rollout, so a retry overwrites the same file. */
    async saveTranscript(transcript: Transcript): Promise<string> {
      const key = transcriptKey(transcript.runName, transcript.rolloutId);
      try {
        const written = await store.putJson(key, transcript);
        recordRollout(transcript.outcome);
        ending();
        return written;
      } catch (error) {
        throw artifactFailure(error, store.locate(key));
      }
    },

    /** Idempotent like saveTranscript: a part's key depends on its rollout and index only. */
    async saveTranscriptPart(part: TranscriptPart): Promise<string> {
      const key = transcriptPartKey(part.runName, part.rolloutId, part.index);
      try {
        return await store.putJson(key, part);
      } catch (error) {
        throw artifactFailure(error, store.locate(key));
      }
    },

    /**
     * The whole transcript from the parts written earlier and the tail, under the same key as
     * saveTranscript; then the parts go. A retry after the parts went finds the transcript written.
     */
    async saveTranscriptFromParts(tail: TranscriptTail): Promise<string> {
      const { runName, rolloutId } = tail.transcript;
      const key = transcriptKey(runName, rolloutId);
      const parts: TranscriptPart[] = [];
      try {
        try {
          for (let index = 0; index < tail.parts; index++)
            parts.push(await store.getJson<TranscriptPart>(transcriptPartKey(runName, rolloutId, index)));
        } catch (error) {
          if (!(error instanceof ArtifactNotFoundError) || (await store.getText(key)) === null) throw error;
          await store.remove(transcriptPartsPrefix(runName, rolloutId));
          ending();
          return key;
        }
        await store.putJson(key, joinTranscript(parts, tail));
        recordRollout(tail.transcript.outcome);
        await store.remove(transcriptPartsPrefix(runName, rolloutId));
        ending();
        return key;
      } catch (error) {
        throw artifactFailure(error, store.locate(key));
      }
    },
  };
}
