import { stableHash } from './seeds.js';

/**
 * The order in which a policy call tries the replicas: first the one its seed picks (a stable hash
 * mod N, so a replayed or re-run call goes to the same replica), then the others in ring order. Every
 * replica serves the same weights under a version's name, so a call served by the next one, with the
 * same seed, asks for the same sample. Without replicas: the base URL alone.
 */
export function replicaOrder(
  endpoint: { baseURL: string; replicas?: readonly string[] | undefined },
  seed: number,
): string[] {
  const replicas = endpoint.replicas;
  if (!replicas || replicas.length === 0) return [endpoint.baseURL];
  const first = stableHash(`replica:${seed}`) % replicas.length;
  return replicas.map((_, i) => replicas[(first + i) % replicas.length]!);
}
