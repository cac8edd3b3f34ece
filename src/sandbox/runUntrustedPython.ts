import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPython, hostConfinement, type HostConfinement } from './confinementProbe.js';
import { untrustedPythonRunSchema, type UntrustedPythonRun, type UntrustedPythonRunSettings } from './sandboxLimits.js';
import { classifyEnding, type SandboxOutcome } from './sandboxOutcome.js';
import { superviseLauncher } from './superviseLauncher.js';

export type { SandboxOutcome } from './sandboxOutcome.js';
export type { UntrustedPythonRun } from './sandboxLimits.js';

/** How one untrusted program ended, with what confined it. */
export interface UntrustedPythonResult {
  /** Only `passed` counts as solved: a caller scores every other outcome as failed. */
  outcome: SandboxOutcome;
  /** The program's exit code (null when a signal or the deadline ended it, or it never started). */
  exitCode: number | null;
  /** The signal that ended it, e.g. 'SIGXCPU'; 'SIGKILL' at the deadline. */
  signal: string | null;
  /** The last `limits.outputKiB` KiB of each stream. */
  stdoutTail: string;
  stderrTail: string;
  /** Bytes the program wrote to each stream in all. */
  stdoutBytes: number;
  stderrBytes: number;
  wallMs: number;
  /** CPU time and peak resident memory of the program (its largest process); null when unknown. */
  cpuMs: number | null;
  maxRssKiB: number | null;
  /** Every confinement actually applied to this run, e.g. 'namespaces:net,pid,mount,ipc,uts', 'rlimit:cpu=10s'. */
  confinement: string[];
  /** Why the sandbox could not run the program (outcome `sandbox-error`). */
  sandboxError?: string;
}

/** The host cannot isolate a program's network and the caller did not allow running without it. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}

const PROGRAM_FILE = 'program.py';
const LAUNCHER = join(__dirname, 'sandboxLauncher.py');
/** Seconds past the deadline after which the launcher kills the program itself, should its supervisor be gone. */
const BACKSTOP_GRACE_SECONDS = 2;

/**
 * Runs untrusted Python source in a separate, confined process and reports how it ended. Never
 * throws for anything the program does; throws SandboxUnavailableError when the host cannot
 * confine it as required, and a ZodError for invalid arguments.
 */
export async function runUntrustedPython(run: UntrustedPythonRun): Promise<UntrustedPythonResult> {
  const settings = untrustedPythonRunSchema.parse(run);
  const host = await hostConfinement();
  if (host.mode === 'none' && !settings.allowWithoutNetworkIsolation)
    throw new SandboxUnavailableError(
      `cannot isolate untrusted code on this host (no network, PID or mount namespace): ${host.problems.join('; ')}. ` +
        'Run as root, or enable unprivileged user namespaces, or pass allowWithoutNetworkIsolation to accept rlimits only.',
    );
  const hostDir = await mkdtemp(join(tmpdir(), 'attune-sandbox-'));
  try {
    const programFile = join(hostDir, PROGRAM_FILE);
    await writeFile(programFile, settings.program, { mode: 0o644 });
    const python = settings.python ?? defaultPython();
    const config = JSON.stringify(launcherConfig(settings, host, programFile));
    const [command, ...args] = [...host.unshare, python, '-I', '-B', LAUNCHER, config];
    // The launcher gets PATH (to find the interpreter) and LANG; it gives the program its own env.
    const env = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };
    const launch = await superviseLauncher(command!, args, env, settings.timeoutMs, settings.limits.outputKiB * 1024);
    const { outcome, applied, ...ending } = classifyEnding(launch.ending, signalName);
    return {
      outcome,
      ...ending,
      stdoutTail: launch.stdout.text(),
      stderrTail: launch.stderr.text(),
      stdoutBytes: launch.stdout.totalBytes,
      stderrBytes: launch.stderr.totalBytes,
      wallMs: Math.round(launch.wallMs),
      confinement: [...supervisorConfinement(settings, host), ...applied],
    };
  } finally {
    await rm(hostDir, { recursive: true, force: true });
  }
}

/** The launcher's argument (sandboxLauncher.py reads exactly these keys). */
function launcherConfig(settings: UntrustedPythonRunSettings, host: HostConfinement, programFile: string) {
  const isRoot = process.getuid?.() === 0;
  return {
    programFile,
    namespaces: host.mode !== 'none',
    // Root of a user namespace cannot become another uid there: it drops its capabilities instead.
    runAs: host.mode === 'root-namespaces' || (host.mode === 'none' && isRoot) ? settings.runAs : null,
    dropCapabilities: host.mode === 'user-namespaces',
    limits: settings.limits,
    niceness: 10,
    backstopSeconds: Math.ceil(settings.timeoutMs / 1000) + BACKSTOP_GRACE_SECONDS,
  };
}

function supervisorConfinement(settings: UntrustedPythonRunSettings, host: HostConfinement): string[] {
  const namespaces = {
    'root-namespaces': 'namespaces:net,pid,mount,ipc,uts',
    'user-namespaces': 'namespaces:user,net,pid,mount,ipc,uts',
    none: 'namespaces:NONE(network, processes and file system of the host are reachable)',
  }[host.mode];
  return [
    'process:separate, own process group (SIGKILLed whole at the deadline)',
    namespaces,
    'env:minimal(PATH, HOME, TMPDIR, LANG)',
    'stdin:/dev/null',
    `output:last ${settings.limits.outputKiB}KiB of each stream kept`,
    `deadline:${settings.timeoutMs}ms`,
  ];
}

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

function signalName(signal: number): string {
  return SIGNAL_NAMES.get(signal) ?? `signal ${signal}`;
}
