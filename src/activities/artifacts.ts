import { transcriptKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import type { Transcript } from '../core/transcript.js';

export function createArtifactActivities(store: ArtifactStore) {
  return {
    /** Idempotent: the key depends only on the rollout, so a retry overwrites the same file. */
    async saveTranscript(transcript: Transcript): Promise<string> {
      return store.putJson(transcriptKey(transcript.runName, transcript.rolloutId), transcript);
    },
  };
}
