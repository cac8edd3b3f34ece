import { z } from 'zod';

/**
 * How a run ended. Only `passed` means the program exited 0 in time; a caller scoring a problem
 * counts every other outcome as failed.
 * - failed: it exited non-zero (an assertion, an exception, a MemoryError, a write refused);
 * - timeout: the wall-clock deadline came first and the whole run was killed;
 * - killed: a signal ended it (SIGXCPU/SIGKILL at the CPU limit, or one it sent itself);
 * - sandbox-error: the sandbox could not set up or start the program, so it did not run.
 */
export type SandboxOutcome = 'passed' | 'failed' | 'timeout' | 'killed' | 'sandbox-error';

/** The launcher's one JSON report on fd 3 (sandboxLauncher.py), read at the process boundary. */
export const launcherReportSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('setup-failed'), error: z.string(), applied: z.array(z.string()) }),
  z.strictObject({
    kind: z.literal('finished'),
    applied: z.array(z.string()),
    exitCode: z.number().int().nullable(),
    signal: z.number().int().nullable(),
    backstopFired: z.boolean(),
    cpuMs: z.number().nonnegative(),
    maxRssKiB: z.number().nonnegative(),
  }),
]);
export type LauncherReport = z.infer<typeof launcherReportSchema>;

/** What the supervisor saw of one launcher process. */
export interface LauncherEnding {
  /** The supervisor killed the run at its deadline. */
  deadlineReached: boolean;
  /** The report text from fd 3 ('' when the launcher wrote none, as when it was killed). */
  reportText: string;
  launcherExitCode: number | null;
  launcherSignal: string | null;
  /** Why the launcher's process could not be started at all. */
  spawnError?: string;
}

export interface ClassifiedEnding {
  outcome: SandboxOutcome;
  exitCode: number | null;
  signal: string | null;
  cpuMs: number | null;
  maxRssKiB: number | null;
  /** What the launcher applied inside the namespaces (file system, user, rlimits). */
  applied: string[];
  sandboxError?: string;
}

/** Outcome of a run from what the supervisor saw. Pure; `signalName` maps a signal number to its name. */
export function classifyEnding(ending: LauncherEnding, signalName: (signal: number) => string): ClassifiedEnding {
  const none = { exitCode: null, signal: null, cpuMs: null, maxRssKiB: null, applied: [] };
  if (ending.spawnError !== undefined) return { ...none, outcome: 'sandbox-error', sandboxError: ending.spawnError };
  if (ending.deadlineReached) return { ...none, outcome: 'timeout', signal: 'SIGKILL' };
  const parsed = parseReport(ending.reportText);
  if (typeof parsed === 'string') {
    const how = ending.launcherSignal ?? `exit code ${ending.launcherExitCode}`;
    return { ...none, outcome: 'sandbox-error', sandboxError: `the launcher ended (${how}) ${parsed}` };
  }
  if (parsed.kind === 'setup-failed')
    return { ...none, outcome: 'sandbox-error', applied: parsed.applied, sandboxError: parsed.error };
  const signal = parsed.signal === null ? null : signalName(parsed.signal);
  const outcome: SandboxOutcome = parsed.backstopFired
    ? 'timeout'
    : signal !== null
      ? 'killed'
      : parsed.exitCode === 0
        ? 'passed'
        : 'failed';
  const { exitCode, cpuMs, maxRssKiB, applied } = parsed;
  return { outcome, exitCode, signal, cpuMs, maxRssKiB, applied };
}

function parseReport(text: string): LauncherReport | string {
  if (text.trim() === '') return 'without a report';
  try {
    const result = launcherReportSchema.safeParse(JSON.parse(text));
    return result.success ? result.data : `with a malformed report: ${result.error.message}`;
  } catch {
    return `with a report that is not JSON: ${text.slice(0, 200)}`;
  }
}
