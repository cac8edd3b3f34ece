import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { S3_CREDENTIAL_ENV } from '../../src/artifacts/s3Store.js';
import { REPO_ROOT } from '../../src/paths.js';
import { freePort } from '../../src/temporal/devServer.js';

/** The tests' bucket. */
export const TEST_BUCKET = 'attune';

/** A cold build of MinIO from the Go module proxy takes minutes on two cores; a cached one, none. */
export const S3_BUILD_TIMEOUT_MS = 25 * 60_000;

let built: Promise<string> | undefined;

/** The MinIO binary, built once per machine by scripts/s3/build-server.sh (cached in ~/.cache/attune). */
export function minioBinary(): Promise<string> {
  built ??= promisify(execFile)('bash', [join(REPO_ROOT, 'scripts', 's3', 'build-server.sh')], {
    timeout: S3_BUILD_TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
  }).then(({ stdout }) => stdout.trim().split('\n').pop()!);
  return built;
}

/**
 * A real MinIO server on a free loopback port with a temp data directory, its own root credentials
 * and the bucket `attune`. `stop` and `start` again keep the port and the data (an outage the store
 * comes back from).
 */
export class S3Server {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private output = '';
  readonly accessKeyId = 'attune-test';
  readonly secretAccessKey = 'attune-test-secret';

  private constructor(
    private readonly binary: string,
    readonly port: number,
    readonly dataDir: string,
  ) {}

  static async start(): Promise<S3Server> {
    const server = new S3Server(await minioBinary(), await freePort(), mkdtempSync(join(tmpdir(), 'attune-minio-')));
    await server.start();
    const client = new S3Client({
      endpoint: server.url,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    });
    try {
      await client.send(new CreateBucketCommand({ Bucket: TEST_BUCKET }));
    } finally {
      client.destroy();
    }
    return server;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The store's credentials by their standard names, for a child process's or a store's environment. */
  get env(): NodeJS.ProcessEnv {
    return {
      [S3_CREDENTIAL_ENV.accessKeyId]: this.accessKeyId,
      [S3_CREDENTIAL_ENV.secretAccessKey]: this.secretAccessKey,
    };
  }

  get log(): string {
    return this.output;
  }

  /** Starts (again) on the same port and data directory; resolves when MinIO says it is live. */
  async start(): Promise<void> {
    if (this.child) throw new Error('MinIO is running already');
    this.output = '';
    const child = spawn(this.binary, ['server', this.dataDir, '--address', `127.0.0.1:${this.port}`, '--quiet'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOME: this.dataDir,
        MINIO_ROOT_USER: this.accessKeyId,
        MINIO_ROOT_PASSWORD: this.secretAccessKey,
        MINIO_BROWSER: 'off',
        MINIO_UPDATE: 'off',
      },
    });
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-8000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`MinIO exited during start-up (${child.exitCode ?? child.signalCode}):\n${this.output}`);
      const ready = await fetch(`${this.url}/minio/health/ready`, { signal: AbortSignal.timeout(1000) })
        .then((r) => r.ok)
        .catch(() => false);
      if (ready) return;
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`MinIO did not get ready on ${this.url} within 60 s:\n${this.output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Stops the server (the store is then down); its data stays for the next start. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await this.exited;
    this.child = null;
  }
}
