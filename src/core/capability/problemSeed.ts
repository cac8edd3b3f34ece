import { stableHash } from '../seeds.js';

/** The policy call's seed for one problem: the same run seed asks the same requests. */
export function problemSeed(seed: number, problemId: string): number {
  return stableHash(`${seed}:capability:${problemId}`) % 2_147_483_647;
}
