/**
 * Mulberry32: a small seeded PRNG. Workflows must be deterministic (the scenario schedule, the
 * evaluation's statistics), and the same inputs must give the same numbers on every machine.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A uniform integer in [0, n). */
export function randomIndex(random: () => number, n: number): number {
  return Math.min(n - 1, Math.floor(random() * n));
}
