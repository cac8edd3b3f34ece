import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** The directory outside the host (in the test's scratch dir) that the host sees as its /tmp. */
export function hostTmpOutside(host: HostName): string {
  root ??= mkdtempSync(join(tmpdir(), 'attune-mh-hosts-'));
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
 * The command run inside the host's network namespace: binds the host's directory over /tmp, then execs
 * the command (the same pid, so a SIGKILL still kills the command itself).
 */
export function withHostFiles(host: HostName, command: string[]): string[] {
  return ['sh', '-c', `mount --bind "$0" ${HOST_TMP} && exec "$@"`, hostTmpOutside(host), ...command];
}
