import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';

/** A free loopback port, as the suite's script picks one. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
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

  /** Starts `start.sh ARGS --port <free port>` and resolves once it prints that vLLM answers. */
  static async start(name: string, args: string[], timeoutMs: number): Promise<VllmServer> {
    mkdirSync(join(REPO_ROOT, 'test-output'), { recursive: true });
    const server = new VllmServer(await freePort(), args, join(REPO_ROOT, 'test-output', `${name}.log`));
    await server.launch(timeoutMs);
    return server;
  }

  private launch(timeoutMs: number): Promise<void> {
    this.output = '';
    const child = spawn('bash', ['scripts/vllm/start.sh', ...this.args, '--port', String(this.port)], {
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
