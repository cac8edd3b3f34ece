import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { progress } from './progress.js';
import type { LoopJob, ToParent } from './protocol.js';

/** The parent's side of the benchmark's child processes (child.ts): start, messages, stop. */

const CHILD = join(__dirname, 'child.ts');

export class Child {
  private readonly waiters: ((message: ToParent) => boolean)[] = [];
  readonly exited: Promise<number | null>;
  private log = '';

  private constructor(readonly proc: ChildProcess) {
    this.exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.on('message', (message: ToParent) => {
      if (message.kind === 'error') progress('child error', { pid: proc.pid, error: message.message });
      for (let i = 0; i < this.waiters.length; i++) {
        if (this.waiters[i]!(message)) this.waiters.splice(i--, 1);
      }
    });
    // Child output (Temporal warnings, crashes) goes to our stderr, and is kept for error messages.
    const pass = (chunk: Buffer) => {
      const text = chunk.toString();
      this.log = (this.log + text).slice(-4000);
      // The policy and simulator workers have no workflows; the SDK says so once per worker.
      const kept = text
        .split('\n')
        .filter((line) => !line.includes('No workflows registered, not polling for workflow tasks'))
        .join('\n');
      if (kept.trim()) process.stderr.write(kept.endsWith('\n') ? kept : `${kept}\n`);
    };
    proc.stdout?.on('data', pass);
    proc.stderr?.on('data', pass);
  }

  static start(mode: 'workers' | 'loops', env: Record<string, string> = {}, profileDir: string | null = null): Child {
    const execArgv = [...process.execArgv, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
    const child = fork(CHILD, [mode], {
      env: { ...process.env, ...env },
      execArgv,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    return new Child(child);
  }

  get pid(): number {
    return this.proc.pid ?? -1;
  }

  /** Resolves with the first message that `match` accepts; rejects if the child exits or reports an error first, or on timeout. */
  next<T extends ToParent>(match: (m: ToParent) => m is T, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`child ${this.pid}: no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onExit = (code: number | null) => {
        clearTimeout(timer);
        reject(new Error(`child ${this.pid} exited (${code}):\n${this.log.slice(-2000)}`));
      };
      this.proc.once('exit', onExit);
      this.waiters.push((m) => {
        if (m.kind === 'error') {
          clearTimeout(timer);
          this.proc.off('exit', onExit);
          reject(new Error(`child ${this.pid}: ${m.message}`));
          return true;
        }
        if (!match(m)) return false;
        clearTimeout(timer);
        this.proc.off('exit', onExit);
        resolve(m);
        return true;
      });
    });
  }

  send(message: LoopJob | { kind: 'stop' }): void {
    this.proc.send(message);
  }

  async stop(timeoutMs = 20_000): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    try {
      if (this.proc.connected) this.send({ kind: 'stop' });
    } catch {
      // already gone
    }
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }
}

export const isReady = (m: ToParent): m is Extract<ToParent, { kind: 'ready' }> => m.kind === 'ready';
