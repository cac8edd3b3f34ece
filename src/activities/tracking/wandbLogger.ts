import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wandbStepDirKey } from '../../artifacts/keys.js';
import { FileArtifactStore, type ArtifactStore } from '../../artifacts/store.js';
import { stepScalars } from '../../core/tracking/trackedValues.js';
import { REPO_ROOT } from '../../paths.js';
import type { StepLogger } from './stepLogger.js';

/** The helper that drives the `wandb` package (there is no W&B client for Node). */
export const WANDB_STEP_SCRIPT = join(REPO_ROOT, 'trainer', 'tracking', 'wandb_step.py');
const WANDB_STEP_TIMEOUT_MS = 120_000;

/**
 * Where the helper writes a step's W&B run directory: in a directory store, at its key; with an
 * object store (a helper writes files, not objects), under the temp directory, so use online mode.
 */
function stepDir(store: ArtifactStore, key: string): string {
  return store instanceof FileArtifactStore ? store.locate(key) : join(tmpdir(), 'attune-wandb', ...key.split('/'));
}

/** The W&B run id of an Attune run: fixed by its name, so every step's process resumes the same run. */
export function wandbRunId(run: string): string {
  return `attune-${run.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`;
}

function runHelper(python: string, request: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [WANDB_STEP_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000);
    });
    child.stdout.resume();
    const timer = setTimeout(() => child.kill('SIGKILL'), WANDB_STEP_TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`W&B helper ${python} ${WANDB_STEP_SCRIPT}: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `W&B helper ${python} ${WANDB_STEP_SCRIPT} exited ${signal ?? code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`,
          ),
        );
    });
    child.stdin.end(JSON.stringify(request));
  });
}

/**
 * One process per step writes the step as a run directory of its own under `runs/<run>/wandb/<step>`
 * (emptied first, so a retry replaces it); online mode (WANDB_API_KEY set) sends it at once.
 */
export function wandbLogger(
  store: ArtifactStore,
  settings: { project: string; mode: string; python: string },
): StepLogger {
  return {
    backend: 'wandb',
    async logStep(record, context) {
      await runHelper(settings.python, {
        dir: stepDir(store, wandbStepDirKey(context.run, record.step)),
        project: settings.project,
        run_id: wandbRunId(context.run),
        run_name: context.run,
        mode: settings.mode,
        step: record.step,
        scalars: stepScalars(record),
        config: context.params,
      });
    },
  };
}
