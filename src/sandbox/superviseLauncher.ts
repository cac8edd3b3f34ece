import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { OutputTail } from './outputTail.js';
import type { LauncherEnding } from './sandboxOutcome.js';

/** What one launcher process did, as its supervisor saw it. */
export interface SupervisedLaunch {
  ending: LauncherEnding;
  stdout: OutputTail;
  stderr: OutputTail;
  wallMs: number;
}

const REPORT_CAP_BYTES = 64 * 1024;
/** After the launcher exits, how long its output may still drain before the pipes are closed. */
const DRAIN_GRACE_MS = 1000;
/** How long a run's killed processes may take to be gone from the process table, and how often that is asked. */
const GROUP_GONE_MS = 10_000;
const GROUP_POLL_MS = 10;

/**
 * Resolves once no process of group `pgid` is left, dying ones included (`kill(-pgid, 0)` answers
 * ESRCH), or after GROUP_GONE_MS. A SIGKILLed process closes its pipes before the kernel has torn it
 * down, and on a loaded machine a fork bomb's processes were still listed when the pipes closed.
 */
async function groupGone(pgid: number | undefined): Promise<void> {
  if (pgid === undefined) return;
  const deadline = performance.now() + GROUP_GONE_MS;
  while (performance.now() < deadline) {
    try {
      process.kill(-pgid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') return;
      throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, GROUP_POLL_MS));
  }
}

/**
 * Runs `command` in its own process group with stdin on /dev/null, stdout and stderr capped, and the
 * launcher's report on fd 3. At `timeoutMs` the whole group is SIGKILLed; when the launcher exits the
 * group is SIGKILLed again, and the result comes once the group's processes are gone, so nothing of
 * the run outlives it. Never rejects: a launcher that could not even start is an ending without a report.
 */
export function superviseLauncher(
  command: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
  outputCapBytes: number,
): Promise<SupervisedLaunch> {
  return new Promise((resolve) => {
    const started = performance.now();
    const stdout = new OutputTail(outputCapBytes);
    const stderr = new OutputTail(outputCapBytes);
    const report = new OutputTail(REPORT_CAP_BYTES);
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], detached: true });
    const streams = [child.stdout!, child.stderr!, child.stdio[3] as Readable];
    streams.forEach((stream, index) =>
      stream.on('data', (chunk: Buffer) => [stdout, stderr, report][index]!.push(chunk)),
    );

    let deadlineReached = false;
    let exit: { code: number | null; signal: string | null; wallMs: number } | undefined;
    let finished = false;
    let drain: NodeJS.Timeout | undefined;
    const killGroup = (): void => {
      // ESRCH once the group is gone: nothing left to kill.
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    };
    const deadline = setTimeout(() => {
      deadlineReached = true;
      tryKill(killGroup);
    }, timeoutMs);
    const finish = (spawnError?: string): void => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      clearTimeout(drain);
      streams.forEach((stream) => stream.destroy());
      const ending: LauncherEnding = {
        deadlineReached,
        reportText: report.text(),
        launcherExitCode: exit?.code ?? null,
        launcherSignal: exit?.signal ?? null,
        ...(spawnError === undefined ? {} : { spawnError }),
      };
      const launch = { ending, stdout, stderr, wallMs: exit?.wallMs ?? performance.now() - started };
      void groupGone(child.pid).then(
        () => resolve(launch),
        () => resolve(launch),
      );
    };
    child.on('error', (error) => finish(`could not start ${command}: ${error.message}`));
    child.on('exit', (code, signal) => {
      exit = { code, signal, wallMs: performance.now() - started };
      clearTimeout(deadline);
      tryKill(killGroup);
      // Only a process that escaped the group (possible without namespaces) can hold the pipes open.
      drain = setTimeout(() => finish(), DRAIN_GRACE_MS);
    });
    child.on('close', () => finish());
  });
}

function tryKill(kill: () => void): void {
  try {
    kill();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}
