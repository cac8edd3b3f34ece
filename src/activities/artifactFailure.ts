import { ApplicationFailure } from '@temporalio/common';
import {
  ArtifactStoreCallError,
  ArtifactStoreRejectedError,
  ArtifactStoreUnreachableError,
} from '../artifacts/storeErrors.js';
import { ARTIFACT_STORE_UNREACHABLE } from '../core/outageWait.js';

/** Failure types of artifact writes; `ArtifactStoreUnreachable` is one an operator can fix (src/core/outageWait.ts). */
export const ARTIFACT_FAILURE_TYPES = {
  full: 'ArtifactStoreFull',
  unreachable: ARTIFACT_STORE_UNREACHABLE,
  rejected: 'ArtifactStoreRejected',
  call: 'ArtifactStoreCallFailed',
} as const;

/**
 * An artifact store's failure as the activity's: a full disk and a refused credential or bucket do
 * not clear by themselves (non-retryable: retrying would only delay the operator's turn, and the
 * message names what to fix); a store out of reach is retried, and past the retries a dialogue waits
 * for the operator at the write. A store call that failed in this process (a defect) fails at once,
 * its original error (and stack) the cause. Anything else is left as it is.
 */
export function artifactFailure(error: unknown, where: string): Error {
  if ((error as NodeJS.ErrnoException).code === 'ENOSPC')
    return ApplicationFailure.nonRetryable(
      `artifact store ${where} is full (${(error as Error).message}); free space, then resume the run`,
      ARTIFACT_FAILURE_TYPES.full,
    );
  if (error instanceof ArtifactStoreRejectedError)
    return ApplicationFailure.nonRetryable(error.message, ARTIFACT_FAILURE_TYPES.rejected);
  if (error instanceof ArtifactStoreUnreachableError)
    return ApplicationFailure.retryable(error.message, ARTIFACT_FAILURE_TYPES.unreachable);
  if (error instanceof ArtifactStoreCallError)
    return ApplicationFailure.create({
      message: error.message,
      type: ARTIFACT_FAILURE_TYPES.call,
      nonRetryable: true,
      cause: error.cause instanceof Error ? error.cause : undefined,
    });
  return error as Error;
}
