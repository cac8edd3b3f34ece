import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../src/paths.js';
import { processAlive } from './processAlive.js';

/**
 * The Temporal cluster on PostgreSQL that `npm run test:postgres` brings up (scripts/temporal-cluster/):
 * with ATTUNE_TEST_TEMPORAL=postgres the shared test environment connects to it instead of starting
 * a dev server.
 */
export type ClusterService = 'frontend' | 'history' | 'matching' | 'worker';

const SERVICE_SCRIPT = join(REPO_ROOT, 'scripts', 'temporal-cluster', 'service.sh');

export function usesPostgresCluster(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.ATTUNE_TEST_TEMPORAL === 'postgres';
}

function required(name: string, env: NodeJS.ProcessEnv): string {
  const value = env[name];
  if (!value)
    throw new Error(`ATTUNE_TEST_TEMPORAL=postgres needs ${name} (set by scripts/temporal-cluster/up.sh's env file)`);
  return value;
}

/** host:port of the cluster's frontend. */
export function clusterAddress(env: NodeJS.ProcessEnv = process.env): string {
  return required('ATTUNE_TEST_TEMPORAL_ADDRESS', env);
}

function servicePid(state: string, service: ClusterService): number {
  return Number(readFileSync(join(state, 'pids', `${service}.pid`), 'utf8').trim());
}

/**
 * SIGKILLs one service of the cluster and starts it again with the same config (a crash and a
 * restart); checks that the old process is gone and a new one runs.
 */
export async function restartClusterService(service: ClusterService, env: NodeJS.ProcessEnv = process.env) {
  const state = required('ATTUNE_TEST_TEMPORAL_CLUSTER', env);
  const before = servicePid(state, service);
  await promisify(execFile)('bash', [SERVICE_SCRIPT, 'restart', state, service]);
  const after = servicePid(state, service);
  if (processAlive(before) || after === before || !processAlive(after))
    throw new Error(`${service}: restart did not replace process ${before} (now ${after})`);
}
