import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { freePort } from '../../src/temporal/devServer.js';
import { replicaAnswerSchema, replicaStateSchema, type ReplicaAnswer, type ReplicaState } from './replicaProtocol.js';

/**
 * A fake vLLM replica process (replicaHost.ts) on fixed ports: `restart` is a SIGKILL and a new
 * process on the same ports, so its publisher and the rollouts find it where they left it, on its
 * launch weights. Its answer log outlives restarts.
 */
export class ReplicaProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  restarts = 0;

  private constructor(
    readonly name: string,
    readonly port: number,
    private readonly controlPort: number,
    readonly answerLog: string,
  ) {}

  static async start(name: string, dir: string): Promise<ReplicaProcess> {
    const replica = new ReplicaProcess(name, await freePort(), await freePort(), join(dir, `answers-${name}.jsonl`));
    await replica.spawn();
    return replica;
  }

  /** Its root (vLLM's RL routes) and its OpenAI base. */
  get root(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get baseURL(): string {
    return `${this.root}/v1`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  private async spawn(): Promise<void> {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(REPO_ROOT, 'bench', 'soak', 'replicaHost.ts'),
        String(this.port),
        String(this.controlPort),
        this.answerLog,
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-4000);
        if (output.includes('replica ready')) resolve();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) =>
        reject(new Error(`replica ${this.name} exited (${code}) before it was ready:\n${output}`)),
      );
    });
  }

  /** A vLLM restart: SIGKILL, then a new process on the same ports (launch weights, unpaused). */
  async restart(): Promise<void> {
    await this.kill();
    this.restarts++;
    await this.spawn();
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await this.exited;
  }

  /** The next `n` `/resume` calls answer 500. */
  async failResumes(n: number): Promise<void> {
    const answer = await fetch(`http://127.0.0.1:${this.controlPort}/fail-resumes?n=${n}`, { method: 'POST' });
    if (!answer.ok) throw new Error(`replica ${this.name}: /fail-resumes answered ${answer.status}`);
  }

  async state(): Promise<ReplicaState> {
    const answer = await fetch(`http://127.0.0.1:${this.controlPort}/state`, { signal: AbortSignal.timeout(5000) });
    return replicaStateSchema.parse(await answer.json());
  }

  /** vLLM's own `GET /is_paused`, as an operator would ask it. */
  async isPaused(): Promise<boolean> {
    const answer = await fetch(`${this.root}/is_paused`, { signal: AbortSignal.timeout(5000) });
    return ((await answer.json()) as { is_paused: boolean }).is_paused;
  }

  /** Every policy answer it gave, over all its processes. */
  answers(): ReplicaAnswer[] {
    let text = '';
    try {
      text = readFileSync(this.answerLog, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => replicaAnswerSchema.parse(JSON.parse(line)));
  }
}
