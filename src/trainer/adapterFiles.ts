/**
 * A checkpoint's LoRA adapter (`GET /v1/runs/{run}/checkpoints/{step}/adapter`) or, for full fine-tuning,
 * its model directory (`.../weights`), fetched from the trainer over HTTP with one route per file, checked
 * against the trainer's digest and written to a local directory that a vLLM on this host (or
 * `attune export`) reads. Nothing here needs a filesystem shared with the trainer.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { TrainerHttpError, trainerRequest, type TrainerEndpoint } from './trainerClient.js';
import { ownDeadlineFetch } from '../http/ownDeadlines.js';

const SHA256 = /^[0-9a-f]{64}$/;

/** What a checkpoint's files are: a LoRA adapter, or the full weights' model directory. */
export type CheckpointFilesKind = 'adapter' | 'weights';
const FORMAT_OF: Record<CheckpointFilesKind, 'peft_lora' | 'hf_full'> = { adapter: 'peft_lora', weights: 'hf_full' };

/**
 * The trainer's manifest (trainer/src/attune_trainer/state/adapter_files.py, weights_files.py). File names
 * are plain names, never paths.
 */
export const adapterManifestSchema = z.object({
  run_id: z.string(),
  step: z.number().int().min(0),
  format: z.enum(['peft_lora', 'hf_full']),
  files: z
    .array(
      z.object({
        name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a plain file name'),
        size: z.number().int().min(0),
        sha256: z.string().regex(SHA256),
      }),
    )
    .min(1),
  digest: z.string().regex(SHA256),
});
export type AdapterManifest = z.infer<typeof adapterManifestSchema>;

/** The record written beside the files: which version they are and the digest they were checked against. */
export const ADAPTER_RECORD = 'attune_adapter.json';

/** sha256 over `<sha256>  <name>\n` per file in name order: what `sha256sum` prints over the sorted files, hashed. */
export function adapterDigest(files: readonly { name: string; sha256: string }[]): string {
  const lines = [...files]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((f) => `${f.sha256}  ${f.name}\n`)
    .join('');
  return createHash('sha256').update(lines).digest('hex');
}

function filesPath(runName: string, step: number, kind: CheckpointFilesKind): string {
  return `/v1/runs/${encodeURIComponent(runName)}/checkpoints/${step}/${kind}`;
}

function kindOf(manifest: AdapterManifest): CheckpointFilesKind {
  return (Object.keys(FORMAT_OF) as CheckpointFilesKind[]).find((kind) => FORMAT_OF[kind] === manifest.format)!;
}

/** Trainer errors as the activities' failures: a missing adapter or a refused token never heals by itself. */
function asFailure(error: unknown, what: string): unknown {
  if (!(error instanceof TrainerHttpError)) return error;
  if (error.status === 404) return ApplicationFailure.nonRetryable(`${what}: ${error.message}`, 'AdapterMissing');
  if (error.status === 401 || error.status === 403)
    return ApplicationFailure.nonRetryable(`${what}: ${error.message}`, 'TrainerRejected');
  return ApplicationFailure.retryable(`${what}: ${error.message}`, 'TrainerError');
}

/** The manifest of a checkpoint's adapter (default) or full weights, checked: its format and its digest. */
export async function fetchAdapterManifest(
  trainer: TrainerEndpoint,
  runName: string,
  step: number,
  kind: CheckpointFilesKind = 'adapter',
): Promise<AdapterManifest> {
  const what = `${kind} of ${runName}@${step}`;
  const path = filesPath(runName, step, kind);
  let json: unknown;
  try {
    ({ json } = await trainerRequest(trainer, 'GET', path));
  } catch (error) {
    throw asFailure(error, what);
  }
  const parsed = adapterManifestSchema.safeParse(json);
  if (!parsed.success || parsed.data.format !== FORMAT_OF[kind])
    throw ApplicationFailure.nonRetryable(
      `trainer GET ${path}: unexpected manifest: ${parsed.success ? `format ${parsed.data.format}` : parsed.error.message}`,
      'TrainerBadResponse',
    );
  if (adapterDigest(parsed.data.files) !== parsed.data.digest)
    throw ApplicationFailure.nonRetryable(
      `trainer GET ${path}: the manifest's digest is not the one of its files`,
      'TrainerBadResponse',
    );
  return parsed.data;
}

/** Streams one file to `dest`, hashing as it goes; its size and sha256 must be the manifest's. */
async function downloadFile(
  trainer: TrainerEndpoint,
  manifest: AdapterManifest,
  file: AdapterManifest['files'][number],
  dest: string,
): Promise<void> {
  const url = `${trainer.url.replace(/\/$/, '')}${filesPath(manifest.run_id, manifest.step, kindOf(manifest))}/${file.name}`;
  const token = process.env[trainer.tokenEnv];
  let response: Response;
  try {
    response = await ownDeadlineFetch(
      url,
      {
        headers: token ? { authorization: `Bearer ${token}` } : {},
        signal: AbortSignal.timeout(30 * 60_000),
      },
    );
  } catch (error) {
    throw ApplicationFailure.retryable(`trainer GET ${url}: unreachable (${(error as Error).message})`, 'TrainerUnreachable');
  }
  if (!response.ok || !response.body) {
    const text = await response.text();
    throw asFailure(new TrainerHttpError(response.status, `trainer GET ${url}: HTTP ${response.status}: ${text.slice(0, 300)}`, text), `${kindOf(manifest)} file ${file.name}`);
  }
  const hash = createHash('sha256');
  let size = 0;
  const handle = await open(dest, 'w', 0o644);
  try {
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      size += chunk.byteLength;
      await handle.write(chunk);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  const sha256 = hash.digest('hex');
  if (size !== file.size || sha256 !== file.sha256)
    throw ApplicationFailure.retryable(
      `trainer GET ${url}: received ${size} bytes with sha256 ${sha256}; the manifest says ${file.size} bytes, ${file.sha256}`,
      'AdapterDigestMismatch',
    );
}

/** Whether `dir` holds exactly the manifest's files, as a finished download records them. */
export function holdsAdapter(dir: string, manifest: AdapterManifest): boolean {
  const record = join(dir, ADAPTER_RECORD);
  if (!existsSync(record)) return false;
  try {
    return (JSON.parse(readFileSync(record, 'utf8')) as { digest?: unknown }).digest === manifest.digest;
  } catch {
    return false;
  }
}

/**
 * Writes the manifest's files to `dir` (a new or empty directory, or one holding this very adapter,
 * which is kept: a retried activity downloads nothing again). Files land in a temp directory beside
 * `dir`, are checked against the manifest, made readable by others (0644, the directory 0755, so a
 * vLLM running as another user reads them), then renamed to `dir`: an interrupted download leaves no
 * half adapter under the name.
 */
export async function downloadAdapter(
  trainer: TrainerEndpoint,
  manifest: AdapterManifest,
  dir: string,
): Promise<{ dir: string; reused: boolean }> {
  if (holdsAdapter(dir, manifest)) return { dir, reused: true };
  const parent = join(dir, '..');
  mkdirSync(parent, { recursive: true });
  // host and pid in the name: removeStaleDownloads tells a dead download's from one in progress
  const tmp = join(parent, `.tmp-${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(tmp, { mode: 0o755 });
  try {
    for (const file of manifest.files) await downloadFile(trainer, manifest, file, join(tmp, file.name));
    const received = manifest.files.map((f) => ({ name: f.name, sha256: f.sha256 }));
    if (adapterDigest(received) !== manifest.digest)
      throw ApplicationFailure.retryable(
        `${kindOf(manifest)} of ${manifest.run_id}@${manifest.step}: digest mismatch`,
        'AdapterDigestMismatch',
      );
    const record = { version: `${manifest.run_id}@${manifest.step}`, digest: manifest.digest, files: manifest.files };
    writeFileSync(join(tmp, ADAPTER_RECORD), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o644 });
    for (const file of [...manifest.files.map((f) => f.name), ADAPTER_RECORD]) chmodSync(join(tmp, file), 0o644);
    chmodSync(tmp, 0o755);
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw error;
  }
  return { dir, reused: false };
}

/** A download's temp directory: `.tmp-<host>-<pid>-<8 hex>` (downloadAdapter), so its owner can be told. */
const DOWNLOAD_TMP = /^\.tmp-(.+)-(\d+)-[0-9a-f]{8}$/;

/**
 * How old a temp directory must be to go whoever owns it (another host's, a live pid that may be a
 * reused one): far beyond any download, which also touches its files as it writes.
 */
export const STALE_DOWNLOAD_MS = 24 * 60 * 60_000;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // it exists, as another user
  }
}

/** The newest mtime of a directory and its files: a download in progress keeps writing one. */
function lastWrittenMs(dir: string): number {
  let newest = statSync(dir).mtimeMs;
  for (const name of readdirSync(dir)) {
    try {
      newest = Math.max(newest, statSync(join(dir, name)).mtimeMs);
    } catch {
      // gone meanwhile
    }
  }
  return newest;
}

/**
 * Removes the temp directories that downloads killed part-way left in `parent` (each as large as the
 * model it was fetching): one written by a process of this host that is no longer alive, or any one
 * not written for `maxAgeMs`. A download in progress, in this process or another one on this host
 * (or on another host sharing the disk, until the age), is left alone. Returns the names removed.
 */
export function removeStaleDownloads(parent: string, maxAgeMs = STALE_DOWNLOAD_MS, nowMs = Date.now()): string[] {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names.filter((n) => n.startsWith('.tmp-'))) {
    const path = join(parent, name);
    try {
      const owner = DOWNLOAD_TMP.exec(name);
      const pid = owner ? Number(owner[2]) : 0;
      const deadHere = owner?.[1] === hostname() && pid > 0 && pid !== process.pid && !processAlive(pid);
      if (!statSync(path).isDirectory() || (!deadHere && nowMs - lastWrittenMs(path) < maxAgeMs)) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(name);
    } catch {
      // removed meanwhile by its owner or another sweep
    }
  }
  return removed.sort();
}

/** `removeStaleDownloads` in each run's directory under `adapterDir` (a publisher's downloads). */
export function removeStaleDownloadsUnder(adapterDir: string, maxAgeMs = STALE_DOWNLOAD_MS): string[] {
  let runs: string[];
  try {
    runs = readdirSync(adapterDir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
  return runs.flatMap((run) => removeStaleDownloads(join(adapterDir, run), maxAgeMs).map((name) => join(run, name)));
}
