/**
 * The failures of an artifact store that callers tell apart: a missing artifact, a store out of
 * reach (it may come back: retry, then wait for the operator) and a store that refuses who we are
 * or what we asked (it will not change by itself: say what to fix).
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
