/**
 * The failures of an artifact store that callers tell apart: a missing artifact, a store out of
 * reach (it may come back: retry, then wait for the operator) and a store that refuses who we are
 * or what we asked (it will not change by itself: say what to fix), and a call that failed in this
 * process before any answer (a defect: retrying repeats it).
 */

export class ArtifactNotFoundError extends Error {
  constructor(key: string, where: string) {
    super(`artifact "${key}" not found in ${where}`);
    this.name = 'ArtifactNotFoundError';
  }
}

/** The store did not answer, or answered with a server error, past the client's own retries. */
export class ArtifactStoreUnreachableError extends Error {
  constructor(
    readonly endpoint: string,
    message: string,
  ) {
    super(message);
    this.name = 'ArtifactStoreUnreachableError';
  }
}

/** The store refused the credentials, the bucket or the request: retrying the same will not help. */
export class ArtifactStoreRejectedError extends Error {
  constructor(
    readonly endpoint: string,
    message: string,
  ) {
    super(message);
    this.name = 'ArtifactStoreRejectedError';
  }
}

/**
 * A store call failed in this process with no answer from the store and no network error (a
 * programming error, a request the client could not build): retrying repeats it. The original
 * error is its cause, and its stack follows this one's message.
 */
export class ArtifactStoreCallError extends Error {
  constructor(
    readonly endpoint: string,
    message: string,
    cause: unknown,
  ) {
    super(message, { cause });
    this.name = 'ArtifactStoreCallError';
    if (cause instanceof Error && cause.stack) this.stack = `${this.name}: ${message}\ncaused by ${cause.stack}`;
  }
}
