import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { progress } from './progress.js';

/**
 * The PostgreSQL Temporal cluster of scripts/temporal-cluster: up.sh brings up PostgreSQL and the
 * four Temporal services (frontend, history, matching, worker) with their state in one directory,
 * down.sh stops them and removes it. This class runs the two scripts and reads the processes' ids.
 */

const SCRIPTS = join(REPO_ROOT, 'scripts', 'temporal-cluster');
export const SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type Service = (typeof SERVICES)[number];

function logLines(stream: NodeJS.ReadableStream | null, msg: string): void {
  let rest = '';
  stream?.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) progress(msg, { line });
  });
  stream?.on('end', () => {
    if (rest.trim()) progress(msg, { line: rest });
  });
}

export class Cluster {
  private upScript: ChildProcess | null = null;
  private downed: Promise<void> | null = null;
  address: string | null = null;

  constructor(readonly stateDir: string) {}

  /** Runs up.sh (PostgreSQL, schemas, the four services, the namespace `default`); resolves with the frontend's address. */
  async up(): Promise<string> {
    const proc = spawn('bash', [join(SCRIPTS, 'up.sh'), this.stateDir], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.upScript = proc;
    let stdout = '';
    proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    logLines(proc.stderr, 'cluster');
    const code = await new Promise<number | null>((resolve, reject) => {
      proc.once('error', reject);
      proc.once('exit', (c, signal) => resolve(signal ? 128 : c));
    });
    this.upScript = null;
    if (code !== 0) throw new Error(`scripts/temporal-cluster/up.sh exited ${code} (its output is above)`);
    const envFile = stdout.trim().split('\n').pop() ?? join(this.stateDir, 'env');
    const match = /^ATTUNE_TEST_TEMPORAL_ADDRESS=(.+)$/m.exec(readFileSync(envFile, 'utf8'));
    if (!match) throw new Error(`${envFile}: no ATTUNE_TEST_TEMPORAL_ADDRESS`);
    this.address = match[1]!.trim();
    return this.address;
  }

  /** The process id of each Temporal service (STATE/pids/SERVICE.pid). */
  servicePids(): Record<Service, number> {
    return Object.fromEntries(
      SERVICES.map((s) => [s, Number(readFileSync(join(this.stateDir, 'pids', `${s}.pid`), 'utf8').trim())]),
    ) as Record<Service, number>;
  }

  /** PostgreSQL's postmaster (the first line of STATE/pgdata/postmaster.pid); its backends are its children. */
  postmasterPid(): number {
    const file = join(this.stateDir, 'pgdata', 'postmaster.pid');
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${file}: no process id`);
    return pid;
  }

  /** Stops up.sh if it still runs, then runs down.sh (services, PostgreSQL, the state directory). Idempotent. */
  down(): Promise<void> {
    this.downed ??= (async () => {
      const up = this.upScript;
      if (up && up.exitCode === null && up.signalCode === null) {
        up.kill('SIGTERM');
        await new Promise((resolve) => up.once('exit', resolve));
      }
      if (!existsSync(this.stateDir)) return;
      progress('cluster down', { state: this.stateDir });
      const proc = spawn('bash', [join(SCRIPTS, 'down.sh'), this.stateDir], {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      logLines(proc.stdout, 'cluster down');
      logLines(proc.stderr, 'cluster down');
      await new Promise((resolve) => proc.once('exit', resolve));
    })();
    return this.downed;
  }
}
