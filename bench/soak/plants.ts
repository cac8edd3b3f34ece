import { cpSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runMetricsKey } from '../../src/artifacts/keys.js';
import { REPO_ROOT } from '../../src/paths.js';
import type { SoakStack } from './stack.js';

/**
 * Planted faults, to show that each check fails when what it guards is broken (test-only, never in a
 * real soak): `ATTUNE_SOAK_PLANT=KIND[,KIND...]`.
 */
export const PLANTS = {
  steps: 'a metrics line written twice (a step counted twice)',
  versions: 'replicas tag their answers with the version before the one they serve',
  paused: 'a replica left paused (POST /pause) before the checks',
  tmp: "a .tmp-* directory left in a publisher's download dir",
  disk: "an export kept past retention (a copy of the newest one in the trainer's exports)",
  rss: 'the llm worker leaks 8 MiB a second (bench/soak/leak.ts through NODE_OPTIONS)',
  history: "Temporal's history limits lowered to 20 events",
} as const;
export type Plant = keyof typeof PLANTS;

export function plantsFromEnv(env: NodeJS.ProcessEnv = process.env): Set<Plant> {
  const asked = (env.ATTUNE_SOAK_PLANT ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = asked.filter((p) => !(p in PLANTS));
  if (unknown.length > 0)
    throw new Error(`ATTUNE_SOAK_PLANT: unknown ${unknown.join(', ')} (${Object.keys(PLANTS).join(', ')})`);
  return new Set(asked as Plant[]);
}

/** The plants that act on processes: set in this process's environment before any child starts. */
export function plantBeforeStart(plants: Set<Plant>): void {
  if (plants.has('rss'))
    process.env.NODE_OPTIONS =
      `${process.env.NODE_OPTIONS ?? ''} --require tsx/cjs --require ${join(REPO_ROOT, 'bench', 'soak', 'leak.ts')}`.trim();
  if (plants.has('versions')) process.env.ATTUNE_SOAK_STALE_TAG = '1';
}

/** The plants that leave something behind: made once the run ended, before the checks. */
export async function plantAfterRun(plants: Set<Plant>, stack: SoakStack, runName: string): Promise<void> {
  if (plants.has('paused')) await fetch(`${stack.replicas[0]!.root}/pause?mode=keep`, { method: 'POST' });
  if (plants.has('tmp')) mkdirSync(join(stack.downloadDirs[0]!, runName, '.tmp-planted-0'), { recursive: true });
  if (plants.has('disk')) {
    const exports = join(stack.trainerStateDir, 'runs', runName, 'exports');
    const newest = readdirSync(exports).sort().at(-1);
    if (newest) cpSync(join(exports, newest), join(exports, 'step-999999'), { recursive: true });
  }
  if (plants.has('steps')) {
    const key = runMetricsKey(runName);
    const text = (await stack.rig.store.getText(key)) ?? '';
    const last = text.trim().split('\n').at(-1) ?? '';
    await stack.rig.store.putText(key, `${text}${last}\n`);
  }
}
