import { ArtifactNotFoundError, ArtifactStoreRejectedError, ArtifactStoreUnreachableError } from './storeErrors.js';

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

/** Network failures (and the SDK's own timeouts): the store may come back. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'TimeoutError',
  'RequestTimeout',
]);

interface SdkError {
  name?: string;
  code?: string;
  Code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

/**
 * One SDK failure as the store's callers tell failures apart: a missing object, a lost conditional
 * write, a store out of reach (retry, then wait for the operator) or a refusal that names what to fix.
 */
export function s3Failure(error: unknown, context: S3FailureContext): Error {
  if (error instanceof ArtifactStoreRejectedError || error instanceof ArtifactStoreUnreachableError) return error;
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
  const unreachable =
    status === undefined ||
    status >= 500 ||
    status === 429 ||
    NETWORK_CODES.has(code) ||
    NETWORK_CODES.has(e.code ?? '') ||
    code === 'SlowDown';
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
