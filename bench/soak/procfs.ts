import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** A process's resident set (VmRSS) in MiB; null once it is gone. Linux /proc. */
export function rssMiB(pid: number): number | null {
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Math.round((Number(kb) / 1024) * 10) / 10;
  } catch {
    return null;
  }
}

/** The process whose command line holds every one of `parts` (the trainer, by its state directory). */
export function pidByCommandLine(parts: string[]): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (parts.every((p) => args.includes(p))) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** Bytes of the regular files under `dir` (0 when it is missing); files vanishing meanwhile are skipped. */
export function bytesUnder(dir: string): number {
  let total = 0;
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of entries) {
    const path = join(dir, name);
    try {
      const stat = statSync(path);
      total += stat.isDirectory() ? bytesUnder(path) : stat.size;
    } catch {
      // removed by retention while we looked
    }
  }
  return total;
}

/** Paths of the `.tmp-*` directories under `dir`, at any depth (interrupted downloads). */
export function tmpDirsUnder(dir: string): string[] {
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    let isDir = false;
    try {
      isDir = statSync(path).isDirectory();
    } catch {
      return [];
    }
    if (!isDir) return [];
    return name.startsWith('.tmp-') ? [path] : tmpDirsUnder(path);
  });
}
