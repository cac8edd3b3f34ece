import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, isAbsolute } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import type { HostName } from './network.js';

/**
 * Each host's own files: a directory of the test's, bound over /tmp inside the host's mount namespace
 * (`ip netns exec` gives every process one that does not propagate back), so a host sees its own /tmp and
 * no other host's. Every state directory of a host (trainer state, MinIO data, adapters, attune's home)
 * lives there: nothing crosses hosts through a shared directory.
 */
export const HOST_TMP = '/tmp';
/** attune's home on every host: the same path, a different directory on each. */
export const HOST_HOME = `${HOST_TMP}/attune-home`;

let root: string | null = null;

/** `path` relative to `dir` when it lies inside it (or is it), else null. */
function inside(dir: string, path: string): string | null {
  const rel = relative(dir, path);
  return rel.startsWith('..') || isAbsolute(rel) ? null : rel;
}

/**
 * What every host must still see at its own path after its /tmp is bound over the real one: the checkout
 * (its code, node_modules and .venv), when it lives under /tmp, as a fresh clone there does.
 */
export function pathsKeptOnHosts(repoRoot: string = REPO_ROOT): string[] {
  return inside(HOST_TMP, repoRoot) === null ? [] : [repoRoot];
}

const shellQuoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/** The directory outside the host (in the test's scratch dir) that the host sees as its /tmp. */
export function hostTmpOutside(host: HostName): string {
  root ??= mkdtempSync(join(tmpdir(), 'attune-mh-hosts-'));
  for (const kept of pathsKeptOnHosts())
    // a host that sees the checkout would see every other host's files through it
    if (inside(kept, root) !== null) throw new Error(`the hosts' files (${root}) must not lie in ${kept}: set TMPDIR`);
  const dir = join(root, host);
  mkdirSync(join(dir, 'attune-home'), { recursive: true });
  return dir;
}

/** A new directory on `host`, as the host's processes name it. */
export function hostDir(host: HostName, name: string): string {
  mkdirSync(join(hostTmpOutside(host), name), { recursive: true });
  return `${HOST_TMP}/${name}`;
}

/**
 * The command run inside the host's network namespace: binds each kept path (pathsKeptOnHosts) onto a
 * mount point in the host's directory, binds that directory with them over /tmp, then execs the command
 * (the same pid, so a SIGKILL still kills the command itself).
 */
export function withHostFiles(host: HostName, command: string[], kept = pathsKeptOnHosts()): string[] {
  const own = hostTmpOutside(host);
  const binds = kept.map((path) => {
    const mountPoint = join(own, inside(HOST_TMP, path)!);
    mkdirSync(mountPoint, { recursive: true });
    return `mount --bind ${shellQuoted(path)} ${shellQuoted(mountPoint)} && `;
  });
  return ['sh', '-c', `${binds.join('')}mount --rbind "$0" ${HOST_TMP} && exec "$@"`, own, ...command];
}
