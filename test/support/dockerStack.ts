import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../src/paths.js';
import { composeFileForV1 } from './composeMerge.js';

/**
 * The Docker side of `npm run test:stack` (scripts/test-stack.sh starts the engine, builds the
 * images and brings the Temporal cluster up, then runs test/stack/ with these variables set).
 */
export interface StackSettings {
  /** The test engine's socket (unix://...); the client and docker-compose reach it through DOCKER_HOST. */
  dockerHost: string;
  dockerClient: string;
  attuneImage: string;
  trainerImage: string;
  /** host:port of the Temporal cluster's frontend on 127.0.0.1. */
  temporalAddress: string;
}

function required(name: string, env: NodeJS.ProcessEnv): string {
  const value = env[name];
  if (!value) throw new Error(`test/stack needs ${name}: run it with \`npm run test:stack\` (scripts/test-stack.sh)`);
  return value;
}

export function stackSettings(env: NodeJS.ProcessEnv = process.env): StackSettings {
  return {
    dockerHost: required('DOCKER_HOST', env),
    dockerClient: env.ATTUNE_STACK_DOCKER ?? '/usr/bin/docker',
    attuneImage: required('ATTUNE_STACK_IMAGE', env),
    trainerImage: required('TRAINER_STACK_IMAGE', env),
    temporalAddress: required('ATTUNE_TEST_TEMPORAL_ADDRESS', env),
  };
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; a non-zero exit is returned, not thrown, so a test can show the output. */
export async function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<CommandResult> {
  try {
    const { stdout, stderr } = await promisify(execFile)(file, args, { env, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(error) };
  }
}

/** Like `run`, but started now and awaited later (a CLI command that follows a training run). */
export function start(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', (error) => resolve({ code: 1, stdout, stderr: `${stderr}${String(error)}` }));
    child.once('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

export function failureText(what: string, result: CommandResult): string {
  const tail = (text: string) => text.split('\n').slice(-40).join('\n');
  return `${what} exited ${result.code}\n--- stdout\n${tail(result.stdout)}\n--- stderr\n${tail(result.stderr)}`;
}

/**
 * docker-compose on one effective file: the given compose files merged (composeMerge.ts), written
 * to a temp dir; paths in it stay relative to the repository root (--project-directory).
 */
export class ComposeProject {
  readonly file: string;
  private readonly dir: string;

  constructor(
    readonly project: string,
    files: string[],
    readonly env: NodeJS.ProcessEnv,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'attune-stack-compose-'));
    this.file = join(this.dir, 'docker-compose.yml');
    writeFileSync(this.file, composeFileForV1(files.map((f) => join(REPO_ROOT, f))));
  }

  args(more: string[]): string[] {
    return ['-p', this.project, '--project-directory', REPO_ROOT, '-f', this.file, ...more];
  }

  run(args: string[]): Promise<CommandResult> {
    return run('docker-compose', this.args(args), this.env);
  }

  start(args: string[]): Promise<CommandResult> {
    return start('docker-compose', this.args(args), this.env);
  }

  /** The id of a service's one container, or null when it has none. */
  async containerId(service: string): Promise<string | null> {
    const result = await this.run(['ps', '-q', service]);
    if (result.code !== 0) throw new Error(failureText(`docker-compose ps ${service}`, result));
    return result.stdout.trim().split('\n')[0] || null;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
