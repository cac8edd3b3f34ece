import { ApplicationFailure } from '@temporalio/common';
import { transcriptKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import type { Transcript } from '../core/transcript.js';

/** A full disk does not clear by itself: retrying would only delay the operator's turn. */
function diskFull(error: unknown, where: string): Error {
  if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') return error as Error;
  return ApplicationFailure.nonRetryable(
    `artifact store ${where} is full (${(error as Error).message}); free space, then resume the run`,
    'ArtifactStoreFull',
  );
}

export function createArtifactActivities(store: ArtifactStore) {
  return {
    /** Idempotent: the key depends only on the rollout, so a retry overwrites the same file. */
    async saveTranscript(transcript: Transcript): Promise<string> {
      const key = transcriptKey(transcript.runName, transcript.rolloutId);
      try {
        return await store.putJson(key, transcript);
      } catch (error) {
        throw diskFull(error, store.locate(key));
      }
    },
  };
}
