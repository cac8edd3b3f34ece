import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { findTemporalCli } from '../../src/temporal/cliBinary.js';
import { freePort, startDevArgs, temporalReachable } from '../../src/temporal/devServer.js';

export interface BenchDevServerOptions {
  /** Directory for the SQLite file; ignored when `inMemory`. */
  home: string;
  /** No --db-filename: the dev server's in-memory SQLite (what the test suite uses). */
  inMemory: boolean;
  /** `--sqlite-pragma NAME=VALUE` flags. */
  sqlitePragmas: string[];
  /** `--dynamic-config-value KEY=JSON` flags. */
  dynamicConfig: string[];
}

/**
 * The same `temporal server start-dev` invocation as src/temporal/devServer.ts (same binary, same
 * search attributes, headless, 127.0.0.1), plus the flags under test, and with the process id
 * exposed so the benchmark can read its peak RSS and CPU time from /proc.
 */
export class BenchDevServer {
  private exited: Promise<void>;
  private output: string[] = [];

  private constructor(
    readonly address: string,
    readonly args: string[],
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const keep = (chunk: Buffer) => {
      this.output.push(chunk.toString());
      if (this.output.length > 100) this.output.shift();
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  static async start(options: BenchDevServerOptions): Promise<BenchDevServer> {
    const port = await freePort();
    const args = [...startDevArgs({ port, logLevel: 'error' }), '--headless'];
    if (!options.inMemory) {
      mkdirSync(options.home, { recursive: true });
      args.push('--db-filename', join(options.home, 'temporal.db'));
    }
    for (const pragma of options.sqlitePragmas) args.push('--sqlite-pragma', pragma);
    for (const value of options.dynamicConfig) args.push('--dynamic-config-value', value);
    const child = spawn(findTemporalCli(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const server = new BenchDevServer(`127.0.0.1:${port}`, args, child);
    let dead = false;
    void server.exited.then(() => {
      dead = true;
    });
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (dead) throw new Error(`dev server exited during start-up:\n${server.output.join('').slice(-2000)}`);
      if (await temporalReachable(server.address, 1000)) return server;
      await new Promise((r) => setTimeout(r, 100));
    }
    await server.stop();
    throw new Error(`dev server did not answer at ${server.address} within 60 s`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
