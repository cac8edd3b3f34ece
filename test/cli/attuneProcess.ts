import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';

export interface AttuneResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `attune ARGS` as its own process, the way an operator runs it: its output so far, and its end. */
export function startAttune(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { done: Promise<AttuneResult>; stderrMatches(pattern: RegExp): Promise<void> } {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'attune.js'), ...args], {
    env: { ...process.env, ...env },
    cwd: REPO_ROOT,
  });
  let stdout = '';
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
    for (const w of waiters.filter((w) => w.pattern.test(stderr))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  const done = new Promise<AttuneResult>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  return {
    done,
    stderrMatches: (pattern) =>
      pattern.test(stderr)
        ? Promise.resolve()
        : Promise.race([
            new Promise<void>((resolve) => waiters.push({ pattern, resolve })),
            done.then(({ stderr: all }) => {
              throw new Error(`attune ${args[0]} ended before printing ${pattern}:\n${all}`);
            }),
          ]),
  };
}

/** Runs `attune ARGS` to its end and collects what it printed. */
export function attune(args: string[], env: NodeJS.ProcessEnv = {}): Promise<AttuneResult> {
  return startAttune(args, env).done;
}
