import { resolve } from 'node:path';
import { REPO_ROOT } from '../src/paths.js';

/**
 * The default results file of bench `bench` in `mode` (null: its full run):
 * bench/results/BENCH.json or bench/results/BENCH-MODE.json. Each bench and mode has a file of its
 * own, so no run overwrites another's figures.
 */
export function defaultResultsFile(bench: string, mode: string | null): string {
  return resolve(REPO_ROOT, 'bench', 'results', mode === null ? `${bench}.json` : `${bench}-${mode}.json`);
}
