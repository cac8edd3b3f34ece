import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/temporal/devServer.js';
import { TRACKING_VENV } from './trackingVenv.js';

const START_TIMEOUT_MS = 300_000;

/** A real MLflow tracking server on loopback: SQLite backend, artifacts served through it. */
export class MlflowServer {
  private output = '';

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-4000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }

  static async start(): Promise<MlflowServer> {
    const dir = mkdtempSync(join(tmpdir(), 'attune-mlflow-'));
    const port = await freePort();
    const child = spawn(
      join(TRACKING_VENV, 'bin', 'mlflow'),
      [
        'server',
        '--backend-store-uri',
        `sqlite:///${join(dir, 'mlflow.db')}`,
        '--artifacts-destination',
        join(dir, 'artifacts'),
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--workers',
        '1',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    const server = new MlflowServer(child, `http://127.0.0.1:${port}`);
    // Its start imports a large Python app: over two minutes measured on 2 cores at a load of 19.
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`mlflow server exited ${child.exitCode}: ${server.output}`);
      const healthy = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(2000) })
        .then((r) => r.ok)
        .catch(() => false);
      if (healthy) return server;
      await new Promise((r) => setTimeout(r, 500));
    }
    await server.stop();
    throw new Error(
      `mlflow server did not answer on ${server.url} within ${START_TIMEOUT_MS / 1000} s: ${server.output}`,
    );
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.pid === undefined) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    // Its own process group: uvicorn's workers go with it.
    process.kill(-this.child.pid, 'SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (this.child.exitCode === null) process.kill(-this.child.pid, 'SIGKILL');
  }
}
