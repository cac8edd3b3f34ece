/** FNV-1a 32-bit: a small stable hash, so seeds derive deterministically inside workflows. */
export function stableHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** A per-call seed from the rollout seed, the turn and the call's role, so retries reproduce the same request. */
export function callSeed(rolloutSeed: number, turn: number, role: string, attempt = 0): number {
  return stableHash(`${rolloutSeed}:${turn}:${role}:${attempt}`) % 2_147_483_647;
}
