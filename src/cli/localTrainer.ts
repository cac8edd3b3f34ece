import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AttuneConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { stopsWithThisProcess } from '../childWatchdog.js';
import { REPO_ROOT } from '../paths.js';

export interface LocalTrainer {
  url: string | null;
  close(): Promise<void>;
}

/** Liveness: the trainer answers /health without a token. */
async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url.replace(/\/$/, '')}/health`, { signal: AbortSignal.timeout(1500) })).ok;
  } catch {
    return false;
  }
}

/** A running trainer that refuses our token would fail every step later: say so now, naming the variable. */
async function checkToken(config: AttuneConfig): Promise<void> {
  const token = process.env[config.trainer.tokenEnv];
  const response = await fetch(`${config.trainer.url.replace(/\/$/, '')}/v1/status`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    signal: AbortSignal.timeout(10_000),
  });
  if (response.status === 401 || response.status === 403)
    throw new Error(
      `trainer ${config.trainer.url} refuses ${token ? 'the token in' : 'requests without a token: set'} ` +
        `$${config.trainer.tokenEnv} (trainer.tokenEnv); it must equal the trainer's TRAINER_TOKEN`,
    );
}

/** The local trainer's environment: its TRAINER_TOKEN is the orchestrator's trainer.tokenEnv, or none. */
function trainerEnv(config: AttuneConfig): NodeJS.ProcessEnv {
  const { TRAINER_TOKEN: _inherited, ...env } = process.env;
  const token = process.env[config.trainer.tokenEnv];
  return token ? { ...env, TRAINER_TOKEN: token } : env;
}

/**
 * The embedded default: when trainer.url points at this machine and nothing answers, start the
 * trainer service (CPU) from the project's virtualenv for the length of the command.
 */
export async function ensureLocalTrainer(config: AttuneConfig, log: Logger): Promise<LocalTrainer> {
  const url = new URL(config.trainer.url);
  if (await healthy(config.trainer.url)) {
    await checkToken(config);
    return { url: null, close: async () => {} };
  }
  if (!['127.0.0.1', 'localhost'].includes(url.hostname)) {
    throw new Error(`trainer ${config.trainer.url} (trainer.url) does not answer /health`);
  }
  const python = join(REPO_ROOT, '.venv', 'bin', 'python');
  if (!existsSync(python))
    throw new Error('the trainer is not installed: run `npm run setup` (or bash trainer/install.sh)');
  const stateDir = resolve(config.home, 'trainer');
  const args = [
    '-m',
    'attune_trainer',
    'serve',
    '--host',
    url.hostname,
    '--port',
    url.port || '80',
    '--state-dir',
    stateDir,
  ];
  log.info('starting the local trainer service', { url: config.trainer.url, stateDir });
  const child: ChildProcess = stopsWithThisProcess(
    spawn(python, args, { stdio: ['ignore', 'ignore', 'pipe'], env: trainerEnv(config) }),
  );
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let dead = false;
  void exited.then(() => {
    dead = true;
  });
  const deadline = Date.now() + 180_000;
  while (!(await healthy(config.trainer.url))) {
    if (dead) throw new Error(`the trainer service exited during start-up:\n${tail}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the trainer service did not answer at ${config.trainer.url} within 180 s:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  log.info('local trainer ready', { url: config.trainer.url });
  return {
    url: config.trainer.url,
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
