import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmdirSync, statfsSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Small RAM-backed file systems that tests fill to make a directory run out of space (needs root). */

/** Why this process cannot mount a tmpfs; null when it can. */
let probed: string | null | undefined;

/**
 * Throws, with the reason, unless this process may mount a tmpfs (root, and a mount that works
 * here, which a container without CAP_SYS_ADMIN refuses); probed once. Tests that fill a small
 * file system call it first, so a machine that cannot mount fails them instead of faking the fault.
 */
export function requireTmpfs(): void {
  probed ??= tmpfsProblem();
  if (probed !== null)
    throw new Error(`this test mounts a size-limited tmpfs: run the suite as root, with mount(8): ${probed}`);
}

function tmpfsProblem(): string | null {
  const uid = process.getuid?.();
  if (uid !== 0) return `running as uid ${uid ?? '(unknown)'}, not root`;
  const probe = mkdtempSync(join(tmpdir(), 'attune-tmpfs-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1M', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return null;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return `mount -t tmpfs failed: ${stderr || (error as Error).message}`;
  } finally {
    rmdirSync(probe);
  }
}

export function mountTmpfs(dir: string, sizeMiB: number): void {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}M`, 'tmpfs', dir], { stdio: 'pipe' });
}

/** Unmounts; lazily when something still holds a file there, so clean-up never fails a test. */
export function unmountTmpfs(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'pipe' });
  } catch {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
    } catch {
      // not mounted (any more)
    }
  }
}

/** Writes a ballast file into `dir` until its file system has no byte left; returns its path. */
export async function fillWithBallast(dir: string): Promise<string> {
  const path = join(dir, 'ballast');
  const file = await open(path, 'w');
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size, 0x61);
      for (;;) {
        try {
          const { bytesWritten } = await file.write(chunk);
          if (bytesWritten < size) break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
  } finally {
    await file.close();
  }
  return path;
}

export async function removeBallast(path: string): Promise<void> {
  await rm(path, { force: true });
}

/** Resizes a mounted tmpfs to what it uses now plus `headroomBytes` (a remount keeps its files). */
export function shrinkTmpfsToUse(dir: string, headroomBytes: number): void {
  const fs = statfsSync(dir);
  const used = (fs.blocks - fs.bfree) * fs.bsize;
  execFileSync('mount', ['-o', `remount,size=${used + headroomBytes}`, dir], { stdio: 'pipe' });
}

export function resizeTmpfs(dir: string, sizeMiB: number): void {
  execFileSync('mount', ['-o', `remount,size=${sizeMiB}M`, dir], { stdio: 'pipe' });
}
