import { spawn, type ChildProcess } from 'node:child_process';
import { HOST_TMP, withHostFiles } from './hostFiles.js';
import { namespaceOf, type HostName } from './network.js';

/**
 * A process on one of the suite's hosts (`ip netns exec`, which execs the command: the child's pid is the
 * command's own, so SIGKILL is a crashed process), with the host's own /tmp (hostFiles.ts). Keeps the tail of its output for failure messages;
 * `restart` starts the same command again.
 */
export class HostProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private output = '';
  private waiters: { pattern: RegExp; resolve: () => void }[] = [];
  private watches: { pattern: RegExp; count: number }[] = [];
  private partialLine = '';

  constructor(
    readonly host: HostName,
    readonly label: string,
    private readonly command: string[],
    private readonly env: NodeJS.ProcessEnv,
    /** The paths under /tmp the host still sees (default: the checkout, when it lives there; hostFiles.ts). */
    private readonly kept?: string[],
  ) {}

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The command's own pid (`ip netns exec` execs it); null before the first start. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get log(): string {
    return this.output;
  }

  start(): this {
    if (this.running) throw new Error(`${this.label} on ${this.host} is running already`);
    this.output = '';
    const child = spawn(
      'ip',
      ['netns', 'exec', namespaceOf(this.host), ...withHostFiles(this.host, this.command, this.kept)],
      {
        // the test's own TMPDIR is not on the host
        env: { ...process.env, ...this.env, TMPDIR: HOST_TMP },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
      const lines = (this.partialLine + chunk.toString()).split('\n');
      this.partialLine = lines.pop() ?? '';
      for (const line of lines) for (const w of this.watches) if (w.pattern.test(line)) w.count += 1;
      for (const w of [...this.waiters])
        if (w.pattern.test(this.output)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve();
        }
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    return this;
  }

  /** Resolves when the output since the last start matches `pattern`; rejects if the process exits first. */
  waitForLog(pattern: RegExp, what: string): Promise<void> {
    if (pattern.test(this.output)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push({ pattern, resolve });
      void this.exited.then(() => {
        if (!pattern.test(this.output))
          reject(new Error(`${this.label} on ${this.host} exited before ${what}:\n${this.output.slice(-3000)}`));
      });
    });
  }

  /** From now on, across restarts, counts the output lines that match `pattern` (the output kept is only a tail). */
  watch(pattern: RegExp): () => number {
    const w = { pattern, count: 0 };
    this.watches.push(w);
    return () => w.count;
  }

  /** The exit code once the process has ended (null: killed by a signal). */
  async exitCode(): Promise<number | null> {
    await this.exited;
    return this.child?.exitCode ?? null;
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.running) this.child!.kill(signal);
    await this.exited;
  }

  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    this.start();
  }
}

/** Polls `probe` until it answers true; the deadline's error names `what`. */
export async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
