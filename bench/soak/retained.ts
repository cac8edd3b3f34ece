import { readdirSync } from 'node:fs';
import { bytesUnder } from './procfs.js';
import { join } from 'node:path';

const dirsIn = (dir: string): string[] => {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
      .map((e) => e.name);
  } catch {
    return [];
  }
};

/**
 * What the run holds on disk at the end: the trainer's checkpoints (`runs/RUN/checkpoints/step-*`,
 * snapshots and any older weights kept beside them), its exports (`runs/RUN/exports/step-*`), and
 * the publishers' downloaded weights (`DIR/RUN/weights-step-*`).
 */
export function retainedOnDisk(
  trainerStateDir: string,
  runName: string,
  downloadDirs: string[],
): { checkpoints: number; exports: number; downloads: number } {
  const run = join(trainerStateDir, 'runs', runName);
  const downloads = downloadDirs.reduce(
    (sum, dir) => sum + dirsIn(join(dir, runName)).filter((d) => d.startsWith('weights-step-')).length,
    0,
  );
  return {
    checkpoints: dirsIn(join(run, 'checkpoints')).length,
    exports: dirsIn(join(run, 'exports')).length,
    downloads,
  };
}

/** Bytes per entry of the trainer's run directory (checkpoints, exports, steplog, results, base, ...). */
export function runDirBytes(trainerStateDir: string, runName: string): Record<string, number> {
  const run = join(trainerStateDir, 'runs', runName);
  const out: Record<string, number> = {};
  try {
    for (const name of readdirSync(run)) out[name] = bytesUnder(join(run, name));
  } catch {
    // no run directory: nothing held
  }
  return out;
}
