import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';

/** A venv of its own for the trackers' servers and readers (MLflow is heavy; the project's venv stays lean). */
export const TRACKING_VENV = join(REPO_ROOT, '.venv-tracking');
export const TRACKING_PYTHON = join(TRACKING_VENV, 'bin', 'python');
const REQUIREMENTS = join(REPO_ROOT, 'test', 'tracking', 'requirements.txt');
/** Written after a complete install, holding the requirements it installed: a changed pin reinstalls. */
const STAMP = join(TRACKING_VENV, '.attune-requirements');

function run(command: string, args: string[]): void {
  console.log(`  [tracking venv] ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
}

/** Creates `.venv-tracking` with the pinned mlflow, tensorboard and wandb once; later calls reuse it. */
export function ensureTrackingVenv(): string {
  const wanted = readFileSync(REQUIREMENTS, 'utf8');
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === wanted) return TRACKING_PYTHON;
  if (!existsSync(TRACKING_PYTHON)) run('python3', ['-m', 'venv', TRACKING_VENV]);
  run(TRACKING_PYTHON, ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', '-r', REQUIREMENTS]);
  writeFileSync(STAMP, wanted);
  return TRACKING_PYTHON;
}
