import { createHash, randomUUID } from 'node:crypto';
import {
  close as closeCallback,
  fsync as fsyncCallback,
  mkdir as mkdirCallback,
  open as openCallback,
  readFileSync,
  rename as renameCallback,
  stat as statCallback,
  unlink as unlinkCallback,
  writeFile as writeFileCallback,
} from 'node:fs';
import { readFile, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { isValidArtifactKey } from './keys.js';
import { ArtifactNotFoundError } from './storeErrors.js';

/** Where transcripts, metrics and reports live. Small on purpose, so an object store can implement it. */
export interface ArtifactStore {
  /** Writes atomically; writing the same key again replaces it (activities may run twice). */
  putJson(key: string, value: unknown): Promise<string>;
  /** Writes text atomically, like putJson. */
  putText(key: string, text: string): Promise<string>;
  /** Writes bytes atomically, like putJson (TensorBoard event files). */
  putBytes(key: string, bytes: Uint8Array): Promise<string>;
  /**
   * Writes JSON only if the key still holds version `expected` (null: only if there is no such key),
   * atomically against other conditional writes of the key from any instance: the compare-and-swap
   * that fences a stale writer. Returns the new version, or null when another writer came first
   * (nothing was written).
   */
  putJsonIf(
    key: string,
    value: unknown,
    expected: string | null,
    options?: ConditionalWriteOptions,
  ): Promise<string | null>;
  getJson<T = unknown>(key: string): Promise<T>;
  /** The text of an artifact and its version (an opaque string for putJsonIf), or null when it does not exist. */
  getVersioned(key: string): Promise<{ text: string; version: string } | null>;
  /** The text of an artifact (JSONL files), or null when it does not exist. */
  getText(key: string): Promise<string | null>;
  /**
   * Adds one newline-terminated line at the end. Appends from several instances at once keep every
   * line; one append adds its line once, even when a client retries a write whose answer was lost.
   * `id` names the append (ASCII, no spaces): appends with the same id add the line once, so two
   * attempts of one activity that race add it once (the object store checks it; a local file's
   * append is one write, and its callers check what they append).
   */
  appendLine(key: string, line: string, id?: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
  /** Removes a key, or every key under a prefix; nothing there is not an error (activities may run twice). */
  remove(prefix: string): Promise<void>;
  /** A location a person can open (a file path here, a URL for object stores). */
  locate(key: string): string;
  /** The store itself, as a person names it: its directory, or `s3://BUCKET/PREFIX`. */
  readonly location: string;
  /**
   * Asks an object store once whether it answers and takes the credentials, so a worker says so
   * before it takes work (a directory has nothing to ask).
   */
  probe?(): Promise<void>;
}

export interface ConditionalWriteOptions {
  /**
   * False: the write must be atomic and visible to every other writer at once, but need not survive
   * the host losing power (a claim or a fence, whose loss only makes the next attempt claim again). A
   * directory store then skips its two flushes to disk; an object store writes durably regardless.
   */
  durable?: boolean;
}

export { ArtifactNotFoundError } from './storeErrors.js';

/** A lock file older than this was left by a writer that died holding it (a conditional write holds it for milliseconds). */
const LOCK_STALE_MS = 10_000;
/** How long a conditional write waits for another's lock before it fails. */
const LOCK_WAIT_MS = 30_000;

/** Directories this store created or found, so a put does not ask again; cleared past this many. */
const KNOWN_DIRS_MAX = 4096;

// The callback API through promisify: a turn journal makes a few small writes per LLM call, and the
// FileHandle-based fs/promises API cost more of the worker's CPU than the writes themselves.
const openFile = promisify(openCallback);
const closeFile = promisify(closeCallback);
const writeWhole = promisify(writeFileCallback);
const fsyncFile = promisify(fsyncCallback);
const renameFile = promisify(renameCallback);
const unlinkFile = promisify(unlinkCallback);
const statFile = promisify(statCallback);
const makeDirs = promisify(mkdirCallback);
const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** Removes a file that may not be there (a lock, a temp file), ignoring that it is not. */
async function unlinkIfThere(path: string): Promise<void> {
  try {
    await unlinkFile(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}

async function statOrNull(path: string) {
  try {
    return await statFile(path);
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

/** Flushes a directory's entries (a rename into it) to disk. */
async function syncDirectory(dir: string): Promise<void> {
  const directory = await openFile(dir, 'r');
  try {
    await fsyncFile(directory);
  } finally {
    await closeFile(directory);
  }
}

/** A directory store's version of a key: its content's hash (records written with putJsonIf carry a fresh token, so content never repeats). */
const contentVersion = (text: string): string => createHash('sha256').update(text).digest('hex');

export class FileArtifactStore implements ArtifactStore {
  readonly root: string;
  private readonly knownDirs = new Set<string>();

  constructor(root: string) {
    this.root = resolve(root);
  }

  get location(): string {
    return this.root;
  }

  private pathOf(key: string): string {
    if (!isValidArtifactKey(key)) throw new Error(`invalid artifact key "${key}"`);
    return join(this.root, ...key.split('/'));
  }

  locate(key: string): string {
    return this.pathOf(key);
  }

  async putJson(key: string, value: unknown): Promise<string> {
    return this.putText(key, `${JSON.stringify(value, null, 2)}\n`);
  }

  async putText(key: string, text: string): Promise<string> {
    return this.putData(key, text);
  }

  async putBytes(key: string, bytes: Uint8Array): Promise<string> {
    return this.putData(key, bytes);
  }

  /**
   * Write to a temp file named for this host, process and write (hosts may share the directory),
   * flush it to disk, rename it over the key, then flush the directory, so that after a crash the
   * key holds either the old or the new content, whole. Not `durable`: no flushes (atomic still).
   */
  private async putData(key: string, data: string | Uint8Array, durable = true): Promise<string> {
    const path = this.pathOf(key);
    const dir = dirname(path);
    const temp = `${path}.${hostname()}.${process.pid}.${randomUUID()}.tmp`;
    try {
      const file = await this.inDirectory(dir, () => openFile(temp, 'w'));
      try {
        await writeWhole(file, data);
        if (durable) await fsyncFile(file);
      } finally {
        await closeFile(file);
      }
      await renameFile(temp, path);
    } catch (error) {
      // A full disk must not leave half-written temp files behind to fill it further.
      await unlinkIfThere(temp).catch(() => undefined); // the write's own failure is the one to report
      throw error;
    }
    if (durable) await syncDirectory(dir);
    return key;
  }

  /**
   * Runs `create` (which makes a file in `dir`) once `dir` exists. A directory this store knows of
   * is not asked for again; one removed since (a swept journal) is made again on the first ENOENT.
   */
  private async inDirectory<T>(dir: string, create: () => Promise<T>): Promise<T> {
    if (!this.knownDirs.has(dir)) await this.makeDirectory(dir);
    try {
      return await create();
    } catch (error) {
      if (!isMissing(error)) throw error;
      await this.makeDirectory(dir);
      return create();
    }
  }

  private async makeDirectory(dir: string): Promise<void> {
    await makeDirs(dir, { recursive: true });
    if (this.knownDirs.size >= KNOWN_DIRS_MAX) this.knownDirs.clear();
    this.knownDirs.add(dir);
  }

  async putJsonIf(
    key: string,
    value: unknown,
    expected: string | null,
    options: ConditionalWriteOptions = {},
  ): Promise<string | null> {
    const text = `${JSON.stringify(value, null, 2)}\n`;
    return this.withKeyLock(key, async () => {
      const current = await this.getText(key);
      if ((current === null ? null : contentVersion(current)) !== expected) return null;
      await this.putData(key, text, options.durable ?? true);
      return contentVersion(text);
    });
  }

  /**
   * Runs `io` holding the key's lock file (created exclusively; `.tmp`, so listings skip it), so a
   * read-compare-write is atomic against every other conditional write of the key, from any process
   * or host sharing the directory. A lock left by a dead writer is broken once it is stale.
   */
  private async withKeyLock<T>(key: string, io: () => Promise<T>): Promise<T> {
    const lock = `${this.pathOf(key)}.lock.tmp`;
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        await closeFile(await this.inDirectory(dirname(lock), () => openFile(lock, 'wx')));
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const held = await statOrNull(lock);
      if (held && Date.now() - held.mtimeMs > LOCK_STALE_MS) await unlinkIfThere(lock);
      else if (Date.now() > deadline) throw new Error(`${lock}: another writer held the lock for ${LOCK_WAIT_MS} ms`);
      else await sleep(1 + Math.floor(Math.random() * 10));
    }
    try {
      return await io();
    } finally {
      await unlinkIfThere(lock);
    }
  }

  async getVersioned(key: string): Promise<{ text: string; version: string } | null> {
    const text = await this.getText(key);
    return text === null ? null : { text, version: contentVersion(text) };
  }

  async getJson<T = unknown>(key: string): Promise<T> {
    const path = this.pathOf(key);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ArtifactNotFoundError(key, this.root);
      throw error;
    }
    return JSON.parse(text) as T;
  }

  async getText(key: string): Promise<string | null> {
    try {
      // Synchronous: the store's texts are small (records, transcripts, metrics lines), and a journal
      // reads one before each LLM call.
      return readFileSync(this.pathOf(key), 'utf8');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async appendLine(key: string, line: string): Promise<void> {
    const path = this.pathOf(key);
    // Append mode: each write lands at the end, so writers keep each other's lines; flushed like a put.
    const file = await this.inDirectory(dirname(path), () => openFile(path, 'a'));
    try {
      await writeWhole(file, line.endsWith('\n') ? line : `${line}\n`, 'utf8');
      await fsyncFile(file);
    } finally {
      await closeFile(file);
    }
  }

  async remove(prefix: string): Promise<void> {
    await rm(this.pathOf(prefix.replace(/\/$/, '')), { recursive: true, force: true });
  }

  async list(prefix: string): Promise<string[]> {
    const base = prefix === '' ? this.root : this.pathOf(prefix.replace(/\/$/, ''));
    const out: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      for (const entry of entries) {
        const full = join(dir, entry.name);
        if (entry.isDirectory()) await walk(full);
        else if (!entry.name.endsWith('.tmp')) out.push(relative(this.root, full).split(sep).join('/'));
      }
    };
    await walk(base);
    return out.sort();
  }
}
