import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';

/** `attune worker` as a real child process, so a test can SIGKILL it like a crashed host. */
export class WorkerProcess {
  private output = '';
  private exited: Promise<void>;
  private readyPromise: Promise<void>;
  private logWaiters: { pattern: RegExp; resolve: () => void }[] = [];

  private constructor(private readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    this.readyPromise = new Promise((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        this.output += chunk.toString();
        if (this.output.includes('"msg":"workers running"')) resolve();
        for (const w of [...this.logWaiters]) {
          if (w.pattern.test(this.output)) {
            this.logWaiters.splice(this.logWaiters.indexOf(w), 1);
            w.resolve();
          }
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) =>
        reject(new Error(`worker exited (${code}) before it was ready:\n${this.output.slice(-3000)}`)),
      );
    });
  }

  static start(
    temporalAddress: string,
    set: string[],
    args: string[] = ['worker'],
    env: NodeJS.ProcessEnv = {},
  ): WorkerProcess {
    const child = spawn(
      process.execPath,
      [join(REPO_ROOT, 'bin', 'attune.js'), ...args, ...set.flatMap((s) => ['--set', s])],
      {
        env: { ...process.env, TEMPORAL_ADDRESS: temporalAddress, ATTUNE_LOG_LEVEL: 'info', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    return new WorkerProcess(child);
  }

  /** Resolves when the worker's output matches `pattern` (already or later). */
  waitForLog(pattern: RegExp): Promise<void> {
    if (pattern.test(this.output)) return Promise.resolve();
    return new Promise((resolve) => this.logWaiters.push({ pattern, resolve }));
  }

  /** Resolves once the worker logged that it polls its queues. */
  ready(): Promise<void> {
    return this.readyPromise;
  }

  /** Whether the process is still alive (it has not exited, of itself or killed). */
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The process id (undefined if it could not be spawned). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends `signal` (e.g. SIGSTOP, SIGCONT) if the process still runs. */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  get log(): string {
    return this.output;
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}
