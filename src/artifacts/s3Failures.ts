import {
  ArtifactNotFoundError,
  ArtifactStoreCallError,
  ArtifactStoreRejectedError,
  ArtifactStoreUnreachableError,
} from './storeErrors.js';

/** What a failed request was doing, for the message. */
export interface S3FailureContext {
  /** The endpoint as a person names it (its URL, or AWS S3 and the region). */
  endpoint: string;
  /** e.g. "writing". */
  action: string;
  /** The object (or store) the request was about, as an s3:// URL. */
  url: string;
  bucket: string;
}

/** A conditional write found the object changed (HTTP 412) or being changed (409): read it again and retry. */
export class ConditionalWriteLost extends Error {
  constructor(url: string) {
    super(`another writer changed ${url} first`);
    this.name = 'ConditionalWriteLost';
  }
}

/** Error codes with which a store refuses the credentials themselves. */
const CREDENTIAL_CODES = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidToken',
  'ExpiredToken',
  'InvalidClientTokenId',
]);

/**
 * Node's codes of a connection that failed or broke (a socket hang-up is ECONNRESET): the store may
 * come back. The SDK retries these too (its transient and network codes).
 */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/** The SDK's names of a request that timed out or found no network; S3's code of a body sent too slowly. */
const NETWORK_NAMES = new Set(['TimeoutError', 'NetworkingError', 'RequestTimeout', 'RequestTimeoutException']);

interface SdkError {
  name?: string;
  code?: string;
  Code?: string;
  message?: string;
  cause?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/** Whether an error that came with no answer from the store is the network's (or wraps one that is). */
function isNetworkError(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as SdkError;
  return (
    NETWORK_CODES.has(e.code ?? '') ||
    NETWORK_NAMES.has(e.name ?? '') ||
    NETWORK_NAMES.has(e.Code ?? '') ||
    (depth < 5 && isNetworkError(e.cause, depth + 1))
  );
}

/**
 * One SDK failure as the store's callers tell failures apart: a missing object, a lost conditional
 * write, a store out of reach (retry, then wait for the operator), a refusal that names what to fix,
 * or a failure in this process (a defect: it fails at once, with its stack).
 */
export function s3Failure(error: unknown, context: S3FailureContext): Error {
  if (
    error instanceof ArtifactStoreRejectedError ||
    error instanceof ArtifactStoreUnreachableError ||
    error instanceof ArtifactStoreCallError
  )
    return error;
  const e = (error ?? {}) as SdkError;
  const status = e.$metadata?.httpStatusCode;
  const code = e.Code ?? e.name ?? e.code ?? 'Error';
  const detail = `${code}${status ? `, HTTP ${status}` : ''}: ${e.message ?? String(error)}`;
  const { endpoint, action, url, bucket } = context;
  if (code === 'NoSuchKey' || (status === 404 && code !== 'NoSuchBucket' && action === 'reading'))
    return new ArtifactNotFoundError(url, endpoint);
  if (status === 412 || code === 'PreconditionFailed' || code === 'ConditionalRequestConflict')
    return new ConditionalWriteLost(url);
  if (code === 'AccessDenied')
    return new ArtifactStoreRejectedError(
      endpoint,
      `the object store at ${endpoint} denied ${action} ${url} to the key in AWS_ACCESS_KEY_ID (${detail})`,
    );
  // A 403 without a code (an answer to HEAD has no body) is most likely the credentials too.
  if (CREDENTIAL_CODES.has(code) || status === 403)
    return new ArtifactStoreRejectedError(
      endpoint,
      `the object store at ${endpoint} refused the credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY while ${action} ${url} (${detail})`,
    );
  if (code === 'NoSuchBucket' || (status === 404 && action === 'opening'))
    return new ArtifactStoreRejectedError(
      endpoint,
      `bucket "${bucket}" (artifacts.url) does not exist at ${endpoint} (${detail})`,
    );
  // No answer at all: the network's failure, or one of this process (a defect, a request it could not
  // build), which retrying would only repeat while the rollouts wait for an operator.
  if (status === undefined && !isNetworkError(error))
    return new ArtifactStoreCallError(
      endpoint,
      `${action} ${url} at ${endpoint} failed in this process, not at the store (${detail})`,
      error,
    );
  const unreachable =
    status === undefined || status >= 500 || status === 429 || isNetworkError(error) || code === 'SlowDown';
  if (unreachable)
    return new ArtifactStoreUnreachableError(
      endpoint,
      `the object store at ${endpoint} is unreachable while ${action} ${url} (${detail})`,
    );
  return new ArtifactStoreRejectedError(
    endpoint,
    `the object store at ${endpoint} refused ${action} ${url} (${detail})`,
  );
}
