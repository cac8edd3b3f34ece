import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type PutObjectCommandInput,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { isValidArtifactKey } from './keys.js';
import { ConditionalWriteLost, s3Failure, type S3FailureContext } from './s3Failures.js';
import { s3EndpointName, s3UrlOf, type S3Location } from '../core/s3Url.js';
import type { ArtifactStore } from './store.js';
import { ArtifactNotFoundError, ArtifactStoreRejectedError } from './storeErrors.js';

/** The standard variables the store's credentials come from (never from config files). */
export const S3_CREDENTIAL_ENV = {
  accessKeyId: 'AWS_ACCESS_KEY_ID',
  secretAccessKey: 'AWS_SECRET_ACCESS_KEY',
  sessionToken: 'AWS_SESSION_TOKEN',
} as const;

// The SDK warns on Node 20 that its releases after January 2027 need Node 22; the version here is
// pinned, and a multi-line warning would break the JSON log lines on stderr.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** Rounds of read-then-conditional-write one appendLine makes before it gives up on writers in its way. */
const APPEND_ROUNDS = 200;
/**
 * The object's metadata entry (x-amz-meta-attune-appends) that lists the ids of its latest appends,
 * oldest first, and how many it keeps (17 bytes each: well under S3's 2 KB of metadata).
 */
const APPEND_IDS_META = 'attune-appends';
const APPEND_IDS_KEPT = 64;
/** DeleteObjects takes at most this many keys a request. */
const DELETE_BATCH = 1000;

export interface S3StoreOptions {
  location: S3Location;
  /** The store's URL (MinIO, Ceph, R2...); absent: AWS S3 in `region`. */
  endpoint?: string | undefined;
  region: string;
  pathStyle: boolean;
  /** Where the credentials are read, by their standard names (S3_CREDENTIAL_ENV). */
  env: NodeJS.ProcessEnv;
  /** Attempts of each request by the SDK (its standard retry mode: backoff with jitter). */
  maxAttempts?: number;
  /** Milliseconds to connect, and for a whole request. */
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
}

/**
 * An artifact store in an S3-compatible bucket, under a prefix. A put is one PUT (atomic: readers see
 * the old object or the new one, whole); appendLine reads the object and writes it back only if it is
 * unchanged (If-Match its ETag, or If-None-Match when new) and tries again when another writer came
 * first, so concurrent appends lose no line and the object reads exactly like the file store's file.
 * Each append also records its id in the object's metadata: when the answer to a write that landed
 * is lost and the SDK's retry of it meets 412, the re-read finds the id and the line is not added again.
 */
export class S3ArtifactStore implements ArtifactStore {
  readonly location: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly endpoint: string;

  constructor(options: S3StoreOptions) {
    this.bucket = options.location.bucket;
    this.prefix = options.location.prefix;
    this.location = s3UrlOf(options.location);
    this.endpoint = s3EndpointName(options.endpoint, options.region);
    const env = options.env;
    this.client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      forcePathStyle: options.pathStyle,
      maxAttempts: options.maxAttempts ?? 3,
      // Checksums only where S3 requires them: not every S3-compatible store knows the newer ones.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: {
        connectionTimeout: options.connectionTimeoutMs ?? 5_000,
        requestTimeout: options.requestTimeoutMs ?? 60_000,
      },
      // The environment only: the SDK's default chain would also ask the instance metadata service.
      credentials: async () => {
        const accessKeyId = env[S3_CREDENTIAL_ENV.accessKeyId];
        const secretAccessKey = env[S3_CREDENTIAL_ENV.secretAccessKey];
        const sessionToken = env[S3_CREDENTIAL_ENV.sessionToken];
        if (!accessKeyId || !secretAccessKey)
          throw new ArtifactStoreRejectedError(
            this.endpoint,
            `the artifact store ${this.location} at ${this.endpoint} needs credentials: set ${S3_CREDENTIAL_ENV.accessKeyId} and ${S3_CREDENTIAL_ENV.secretAccessKey}`,
          );
        return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
      },
    });
  }

  private objectKey(key: string): string {
    if (!isValidArtifactKey(key)) throw new Error(`invalid artifact key "${key}"`);
    return this.prefix ? `${this.prefix}/${key}` : key;
  }

  private context(action: string, key: string): S3FailureContext {
    return { endpoint: this.endpoint, action, url: this.locate(key), bucket: this.bucket };
  }

  locate(key: string): string {
    return `s3://${this.bucket}/${this.objectKey(key)}`;
  }

  async putJson(key: string, value: unknown): Promise<string> {
    return this.put(key, `${JSON.stringify(value, null, 2)}\n`, 'application/json');
  }

  async putText(key: string, text: string): Promise<string> {
    return this.put(key, text, 'text/plain; charset=utf-8');
  }

  async putBytes(key: string, bytes: Uint8Array): Promise<string> {
    return this.put(key, bytes, 'application/octet-stream');
  }

  /** If-Match the version read (its ETag), or If-None-Match * for a key that must not exist yet. */
  async putJsonIf(key: string, value: unknown, expected: string | null): Promise<string | null> {
    const condition = expected === null ? { IfNoneMatch: '*' } : { IfMatch: expected };
    try {
      return await this.putObject(key, `${JSON.stringify(value, null, 2)}\n`, 'application/json', condition);
    } catch (error) {
      // 412 (or 409 while another write is under way); If-Match on a key removed since is a 404.
      if (error instanceof ConditionalWriteLost || error instanceof ArtifactNotFoundError) return null;
      throw error;
    }
  }

  async getVersioned(key: string): Promise<{ text: string; version: string } | null> {
    const found = await this.read(key);
    return found ? { text: found.text, version: found.etag } : null;
  }

  private async put(
    key: string,
    body: string | Uint8Array,
    contentType: string,
    condition: Pick<PutObjectCommandInput, 'IfMatch' | 'IfNoneMatch' | 'Metadata'> = {},
  ): Promise<string> {
    await this.putObject(key, body, contentType, condition);
    return key;
  }

  /** One PUT; the new object's ETag. */
  private async putObject(
    key: string,
    body: string | Uint8Array,
    contentType: string,
    condition: Pick<PutObjectCommandInput, 'IfMatch' | 'IfNoneMatch' | 'Metadata'>,
  ): Promise<string> {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: this.objectKey(key),
      Body: body,
      ContentType: contentType,
      ...condition,
    });
    try {
      return (await this.client.send(command)).ETag ?? '';
    } catch (error) {
      throw s3Failure(error, this.context('writing', key));
    }
  }

  /** The object's text, ETag and the ids of its latest appends, or null when there is none. */
  private async read(key: string): Promise<{ text: string; etag: string; appendIds: string[] } | null> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      const text = (await object.Body?.transformToString('utf8')) ?? '';
      const appendIds = (object.Metadata?.[APPEND_IDS_META] ?? '').split(' ').filter(Boolean);
      return { text, etag: object.ETag ?? '', appendIds };
    } catch (error) {
      const failure = s3Failure(error, this.context('reading', key));
      if (failure instanceof ArtifactNotFoundError) return null;
      throw failure;
    }
  }

  async getJson<T = unknown>(key: string): Promise<T> {
    const found = await this.read(key);
    if (!found) throw new ArtifactNotFoundError(key, this.location);
    return JSON.parse(found.text) as T;
  }

  async getText(key: string): Promise<string | null> {
    return (await this.read(key))?.text ?? null;
  }

  async appendLine(key: string, line: string, appendId?: string): Promise<void> {
    const added = line.endsWith('\n') ? line : `${line}\n`;
    const id = appendId ?? randomBytes(8).toString('hex');
    for (let round = 1; ; round++) {
      const current = await this.read(key);
      // A write of ours landed although its answer was lost (the SDK's retry of it then met 412), or
      // another attempt at the same append (the same id) came first.
      if (current?.appendIds.includes(id)) return;
      const condition = current ? { IfMatch: current.etag } : { IfNoneMatch: '*' };
      const appendIds = [...(current?.appendIds ?? []), id].slice(-APPEND_IDS_KEPT).join(' ');
      try {
        await this.put(key, `${current?.text ?? ''}${added}`, 'text/plain; charset=utf-8', {
          ...condition,
          Metadata: { [APPEND_IDS_META]: appendIds },
        });
        return;
      } catch (error) {
        if (!(error instanceof ConditionalWriteLost)) throw error;
        if (round >= APPEND_ROUNDS)
          throw new Error(
            `appending to ${this.locate(key)} at ${this.endpoint}: other writers changed it ${round} times in a row`,
          );
        // Another writer came first (or our own write did): read again, after a short random pause so we do not collide again.
        await sleep(Math.floor(Math.random() * Math.min(100, 5 * round)));
      }
    }
  }

  async list(prefix: string): Promise<string[]> {
    const trimmed = prefix.replace(/\/$/, '');
    const under = trimmed === '' ? (this.prefix ? `${this.prefix}/` : '') : `${this.objectKey(trimmed)}/`;
    const strip = this.prefix ? this.prefix.length + 1 : 0;
    const keys: string[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: under, ContinuationToken: token }),
        );
      } catch (error) {
        throw s3Failure(error, this.context('listing', trimmed || '.'));
      }
      for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key.slice(strip));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  }

  async remove(prefix: string): Promise<void> {
    const trimmed = prefix.replace(/\/$/, '');
    const keys = [this.objectKey(trimmed), ...(await this.list(trimmed)).map((k) => this.objectKey(k))];
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      let result;
      try {
        result = await this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }),
        );
      } catch (error) {
        throw s3Failure(error, this.context('removing', trimmed));
      }
      const failed = (result.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0)
        throw new ArtifactStoreRejectedError(
          this.endpoint,
          `${this.endpoint} did not remove ${failed.length} object(s) under ${this.locate(trimmed)}: ${failed[0]?.Key} (${failed[0]?.Code}: ${failed[0]?.Message})`,
        );
    }
  }

  /**
   * Lists one key under the prefix, so a wrong endpoint, bucket or credential is reported before
   * any work starts (a list, not HEAD: its refusal says why).
   */
  async probe(): Promise<void> {
    try {
      await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix ? `${this.prefix}/` : '', MaxKeys: 1 }),
      );
    } catch (error) {
      throw s3Failure(error, { endpoint: this.endpoint, action: 'opening', url: this.location, bucket: this.bucket });
    }
  }

  /** Closes the client's connections (tests, short-lived commands). */
  close(): void {
    this.client.destroy();
  }
}
