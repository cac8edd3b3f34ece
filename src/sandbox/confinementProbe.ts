import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * How this host can confine a program, found once per process by trying it:
 * - root-namespaces: root; own network, PID, mount, IPC and UTS namespaces; the program as an unprivileged uid;
 * - user-namespaces: not root (or root without CAP_SYS_ADMIN) but unprivileged user namespaces work:
 *   the same namespaces inside a user namespace, the program as its root with every capability dropped;
 * - none: no namespace can be made here.
 */
export type ConfinementMode = 'root-namespaces' | 'user-namespaces' | 'none';

export interface HostConfinement {
  mode: ConfinementMode;
  /** unshare(1) and its arguments, to put before the launcher's command; [] for `none`. */
  unshare: string[];
  /** Why each stronger mode failed, for the error that refuses to run without one. */
  problems: string[];
}

/** Namespaces for every confined run; --kill-child: the launcher (PID 1 inside) dies if unshare does. */
const NAMESPACE_FLAGS = [
  '--net',
  '--pid',
  '--fork',
  '--kill-child=SIGKILL',
  '--mount',
  '--mount-proc',
  '--ipc',
  '--uts',
];

const CANDIDATES: { mode: Exclude<ConfinementMode, 'none'>; flags: string[]; needsRoot: boolean }[] = [
  { mode: 'root-namespaces', flags: NAMESPACE_FLAGS, needsRoot: true },
  { mode: 'user-namespaces', flags: ['--user', '--map-root-user', ...NAMESPACE_FLAGS], needsRoot: false },
];

let probed: Promise<HostConfinement> | undefined;

/** The strongest confinement this host allows; probed on first use, then remembered. */
export function hostConfinement(): Promise<HostConfinement> {
  probed ??= probeHost();
  return probed;
}

async function probeHost(): Promise<HostConfinement> {
  const problems: string[] = [];
  const isRoot = process.getuid?.() === 0;
  for (const candidate of CANDIDATES) {
    if (candidate.needsRoot && !isRoot) {
      problems.push(`${candidate.mode}: not running as root`);
      continue;
    }
    const problem = await tryUnshare(candidate.flags);
    if (problem === null) return { mode: candidate.mode, unshare: ['unshare', ...candidate.flags], problems };
    problems.push(`${candidate.mode}: ${problem}`);
  }
  return { mode: 'none', unshare: [], problems };
}

function tryUnshare(flags: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      'unshare',
      [...flags, 'true'],
      { timeout: 10_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
      (error, _out, stderr) => resolve(error === null ? null : (stderr.trim() || error.message).split('\n')[0]!),
    );
  });
}

/** The interpreter a program runs under when the caller names none: the system's, which any uid may run. */
export function defaultPython(): string {
  return existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
}
