import { isValidArtifactKey, KEY_PART_CHARS } from './names.js';

/**
 * `artifacts.url` of an object store: `s3://BUCKET` or `s3://BUCKET/PREFIX`. Pure, so the config
 * schema checks it at load and the store's factory reads it with the same rule.
 */

/** S3's bucket naming rule (lower case, digits, dots and hyphens, 3 to 63 characters). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export interface S3Location {
  bucket: string;
  /** Without leading or trailing `/`; '' for the bucket's root. */
  prefix: string;
}

/** The bucket and prefix of an `s3://` URL, or a sentence saying what is wrong with it. */
export function parseS3Url(url: string): S3Location | string {
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(url);
  if (!match) return `"${url}" is not an s3://BUCKET/PREFIX URL`;
  const bucket = match[1]!;
  const prefix = (match[2] ?? '').replace(/\/+$/, '');
  if (!BUCKET.test(bucket)) return `"${bucket}" in ${url} is not a valid bucket name (a-z, 0-9, '.', '-'; 3 to 63)`;
  if (prefix !== '' && !isValidArtifactKey(prefix))
    return `"${prefix}" in ${url} is not a valid prefix (it follows the artifact keys' rule: parts of ${KEY_PART_CHARS} separated by /)`;
  return { bucket, prefix };
}

/** `s3://BUCKET/PREFIX` written back, without a trailing `/`. */
export function s3UrlOf(location: S3Location): string {
  return `s3://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
}

/** An object store's endpoint as messages name it: its URL, or AWS S3 and the region. */
export function s3EndpointName(endpoint: string | undefined, region: string): string {
  return endpoint ?? `AWS S3 (${region})`;
}
