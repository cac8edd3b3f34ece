import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { stopsWithThisProcess } from '../childWatchdog.js';
import { findTemporalCli } from './cliBinary.js';
import { plainConnectionOptions, type TemporalConnectionOptions } from './connectionOptions.js';
import { devServerSearchAttributeArgs } from './searchAttributes.js';

export interface DevServerOptions {
  /** Directory for the SQLite file, so state survives a restart. */
  home: string;
  port?: number;
  uiPort?: number;
  /** No web UI (tests). */
  headless?: boolean;
  namespace?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  readyTimeoutMs?: number;
  /** Extra dynamic config values (`--dynamic-config-value KEY=VALUE`), e.g. lower history limits in tests. */
  dynamicConfig?: Record<string, string | number | boolean>;
}

/**
 * A port nothing listens on, which the kernel will not hand out again for a while. Closing a
 * listener bound to port 0 is not enough: the kernel may give the same number to the next bind to
 * port 0 (the dev server picks its internal service ports that way), and the dev server then dies
 * at start-up on "address already in use". So, like the Temporal CLI's own port picker, we connect
 * to the port and close the accepted side first: that side stays in TIME_WAIT (60 s on Linux),
 * which keeps the number out of bind(0) while an explicit bind with SO_REUSEADDR (Go and Node
 * servers set it) still succeeds.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.unref();
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolveListen());
  });
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  const accepted = new Promise<Socket>((resolveAccept) => server.once('connection', resolveAccept));
  const client = connect({ host: '127.0.0.1', port: address.port });
  const clientClosed = new Promise<void>((resolveClose, reject) => {
    client.once('close', () => resolveClose());
    client.once('error', reject);
  });
  (await accepted).end();
  await clientClosed;
  await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
  return address.port;
}

/**
 * Whether something accepts Temporal gRPC calls at `target`: a dev server's host:port (plain), or
 * the options of a configured server (TLS, API key).
 */
export async function temporalReachable(
  target: string | TemporalConnectionOptions,
  timeoutMs = 1500,
): Promise<boolean> {
  return (await temporalUnreachableBecause(target, timeoutMs)) === null;
}

/** Why a Temporal frontend does not answer `getSystemInfo` within `timeoutMs`, or null when it does. */
export async function temporalUnreachableBecause(
  target: string | TemporalConnectionOptions,
  timeoutMs = 1500,
): Promise<string | null> {
  const options = typeof target === 'string' ? plainConnectionOptions(target) : target;
  try {
    const connection = await Connection.connect({ ...options, connectTimeout: timeoutMs });
    try {
      await connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.getSystemInfo({}));
      return null;
    } finally {
      await connection.close();
    }
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * The wait for one readiness answer, attempt by attempt: short while the server is still binding its
 * port, longer once it is slow to answer, so a loaded machine (a CI runner building Go beside the
 * suite) is not mistaken for a dead server by a fixed one-second deadline.
 */
export function readinessAttemptTimeoutMs(attempt: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attempt - 2), 15_000);
}

/** The Temporal CLI's dev server as a child process, with its state in a SQLite file. */
/**
 * Flags that cut the dev server's CPU per workflow task (bench/orchestration measures them):
 * SQLite in WAL mode without an fsync per commit (a dev server's state survives a crash of the
 * process, not of the machine), and one partition per task queue, since a single node gains nothing
 * from spreading pollers over the default four and pays for forwarding tasks between them.
 */
export const DEV_SERVER_SQLITE_TUNING = [
  '--sqlite-pragma',
  'journal_mode=wal',
  '--sqlite-pragma',
  'synchronous=normal',
];
export const DEV_SERVER_QUEUE_TUNING = [
  '--dynamic-config-value',
  'matching.numTaskqueueReadPartitions=1',
  '--dynamic-config-value',
  'matching.numTaskqueueWritePartitions=1',
];

/** The head of the output (where the error or panic message is) and, if it is long, its last lines. */
export function startupOutput(output: string, head = 3000, tail = 1000): string {
  if (output.length <= head + tail) return output;
  return `${output.slice(0, head)}\n[... ${output.length - head - tail} characters left out ...]\n${output.slice(-tail)}`;
}

/**
 * The `temporal server start-dev` arguments every dev server of Attune's shares: loopback only,
 * its port and log level, single-partition queues and Attune's search attributes.
 */
export function startDevArgs(options: { port: number; logLevel: string }): string[] {
  return [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--log-level',
    options.logLevel,
    ...DEV_SERVER_QUEUE_TUNING,
    ...devServerSearchAttributeArgs(),
  ];
}

export class DevServer {
  readonly address: string;
  readonly uiUrl: string | null;
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> | null = null;
  /** Start-up output: a Go panic's cause is at its head, the trace after it. */
  private output = '';

  private constructor(readonly options: Required<Omit<DevServerOptions, 'uiPort'>> & { uiPort: number }) {
    this.address = `127.0.0.1:${options.port}`;
    this.uiUrl = options.headless ? null : `http://127.0.0.1:${options.uiPort}`;
  }

  static async create(options: DevServerOptions): Promise<DevServer> {
    const port = options.port ?? (await freePort());
    const uiPort = options.uiPort ?? (options.headless ? 0 : await freePort());
    return new DevServer({
      home: resolve(options.home),
      port,
      uiPort,
      headless: options.headless ?? false,
      namespace: options.namespace ?? 'default',
      logLevel: options.logLevel ?? 'error',
      readyTimeoutMs: options.readyTimeoutMs ?? 180_000,
      dynamicConfig: options.dynamicConfig ?? {},
    });
  }

  get dbFile(): string {
    return join(this.options.home, 'temporal.db');
  }

  /** Starts the server and resolves once it answers gRPC calls. */
  async start(): Promise<void> {
    if (this.child) throw new Error('dev server already running');
    mkdirSync(this.options.home, { recursive: true });
    const args = [
      ...startDevArgs({ port: this.options.port, logLevel: this.options.logLevel }),
      '--db-filename',
      this.dbFile,
      '--namespace',
      this.options.namespace,
      ...DEV_SERVER_SQLITE_TUNING,
      ...Object.entries(this.options.dynamicConfig).flatMap(([key, value]) => [
        '--dynamic-config-value',
        `${key}=${JSON.stringify(value)}`,
      ]),
      ...(this.options.headless ? ['--headless'] : ['--ui-port', String(this.options.uiPort), '--ui-ip', '127.0.0.1']),
    ];
    this.output = '';
    const child = stopsWithThisProcess(spawn(findTemporalCli(), args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    this.child = child;
    const keep = (chunk: Buffer) => {
      if (this.output.length < 64_000) this.output += chunk.toString();
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolveExit) => child.once('exit', (code) => resolveExit(code)));
    const deadline = Date.now() + this.options.readyTimeoutMs;
    let dead = false;
    void this.exited.then(() => {
      dead = true;
    });
    let lastProblem = 'no attempt';
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      if (dead) throw new Error(`Temporal dev server exited during start-up:\n${startupOutput(this.output)}`);
      const timeoutMs = Math.max(1, Math.min(readinessAttemptTimeoutMs(attempt), deadline - Date.now()));
      const problem = await temporalUnreachableBecause(this.address, timeoutMs);
      if (problem === null) return;
      lastProblem = `attempt ${attempt + 1} (${timeoutMs} ms): ${problem}`;
      await new Promise((r) => setTimeout(r, 200));
    }
    await this.stop();
    throw new Error(
      `Temporal dev server did not answer at ${this.address} within ${this.options.readyTimeoutMs} ms; last ${lastProblem}; its output:\n${startupOutput(this.output)}`,
    );
  }

  /** Graceful stop (SIGTERM), or SIGKILL to simulate a crash. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || !this.exited) return;
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
    this.child = null;
    this.exited = null;
  }

  get running(): boolean {
    return this.child !== null;
  }
}
