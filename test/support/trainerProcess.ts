import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { freePort } from '../../src/temporal/devServer.js';

/** The real trainer service (`python -m attune_trainer serve`) as a child process a test can SIGKILL and restart. */
function withoutToken(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...env };
  delete copy.TRAINER_TOKEN;
  return copy;
}

export class TrainerProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private output = '';
  private logWaiters: { pattern: RegExp; resolve: () => void }[] = [];

  private constructor(
    readonly port: number,
    readonly stateDir: string,
    private readonly extraEnv: NodeJS.ProcessEnv,
  ) {}

  /** `env.TRAINER_TOKEN` starts it with a token; `runState` then sends it. */
  static async start(stateDir: string, env: NodeJS.ProcessEnv = {}): Promise<TrainerProcess> {
    const trainer = new TrainerProcess(await freePort(), stateDir, env);
    await trainer.start();
    return trainer;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get log(): string {
    return this.output;
  }

  async start(): Promise<void> {
    this.output = '';
    const child = spawn(
      join(REPO_ROOT, '.venv', 'bin', 'python'),
      [
        '-m',
        'attune_trainer',
        'serve',
        '--host',
        '127.0.0.1',
        '--port',
        String(this.port),
        '--state-dir',
        this.stateDir,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        // The token comes from `extraEnv` alone: one left in this process's environment must not
        // turn on auth in trainers whose tests do not send it.
        env: { ...withoutToken(process.env), PYTHONUNBUFFERED: '1', ...this.extraEnv },
      },
    );
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
      for (const w of [...this.logWaiters]) {
        if (w.pattern.test(this.output)) {
          this.logWaiters.splice(this.logWaiters.indexOf(w), 1);
          w.resolve();
        }
      }
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    // Ready when /health answers; the process exiting first is a failure with its log.
    let dead = false;
    void this.exited.then(() => {
      dead = true;
    });
    for (;;) {
      if (dead) throw new Error(`trainer exited during start-up:\n${this.output.slice(-3000)}`);
      try {
        if ((await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(1000) })).ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Resolves when the trainer's output (since its last start) matches `pattern`. */
  waitForLog(pattern: RegExp): Promise<void> {
    if (pattern.test(this.output)) return Promise.resolve();
    return new Promise((resolve) => this.logWaiters.push({ pattern, resolve }));
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
    this.child = null;
  }

  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    await this.start();
  }

  /** Waits until the trainer has begun applying `step` (the step endpoint has been called for it). */
  async runState(runId: string): Promise<{ step: number; in_progress_step?: number | null }> {
    const token = this.extraEnv.TRAINER_TOKEN;
    const response = await fetch(`${this.url}/v1/runs/${runId}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return (await response.json()) as { step: number; in_progress_step?: number | null };
  }
}
