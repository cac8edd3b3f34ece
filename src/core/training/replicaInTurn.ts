import type { ReplicaUpdates } from './trainingSettingsSchema.js';

/**
 * The replicas a step's publish goes to. `every` (the default): all of them. `inTurn`: the one whose
 * turn it is, step k to replica k mod N, so each reload leaves the others serving; a run's calls take
 * any version from the one their dialogue started on, and the replica updated last serves the newest.
 * An `ensure` (the base version before overlapping steps first sample it) goes to all.
 */
export function replicasToPublish<R>(
  replicas: readonly R[],
  step: number,
  updates: ReplicaUpdates | undefined,
  ensure: boolean,
): R[] {
  if (updates !== 'inTurn' || ensure || replicas.length < 2) return [...replicas];
  return [replicas[step % replicas.length]!];
}
