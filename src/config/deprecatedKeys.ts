/**
 * Keys of earlier releases and the key each became. The loader still takes the old key for a release:
 * it moves the value to the new key and warns once, naming it. A move is one line here.
 */
export const DEPRECATED_KEYS: readonly { from: string; to: string }[] = [
  { from: 'training.credit', to: 'training.credit.mode' },
  { from: 'training.turnDiscount', to: 'training.credit.turnDiscount' },
  { from: 'training.creditWeight', to: 'training.credit.weight' },
  { from: 'training.publish', to: 'training.publish.mode' },
  { from: 'training.publishKeep', to: 'training.publish.keep' },
  { from: 'training.publisherWaitMs', to: 'training.publish.publisherWaitMs' },
  { from: 'training.stepTimeoutMs', to: 'training.trainer.stepTimeoutMs' },
  { from: 'training.heartbeatTimeoutMs', to: 'training.trainer.heartbeatTimeoutMs' },
  { from: 'training.sameErrorAttempts', to: 'training.trainer.sameErrorAttempts' },
  { from: 'training.optimizerRetry', to: 'training.trainer.retry' },
  { from: 'rollout.initialEmotion', to: 'rollout.dialogue.initialEmotion' },
  { from: 'rollout.maxTurns', to: 'rollout.dialogue.maxTurns' },
  { from: 'rollout.think', to: 'rollout.dialogue.think' },
  { from: 'evaluation.initialEmotion', to: 'evaluation.dialogue.initialEmotion' },
  { from: 'evaluation.maxTurns', to: 'evaluation.dialogue.maxTurns' },
  { from: 'evaluation.think', to: 'evaluation.dialogue.think' },
  { from: 'training.initialEmotion', to: 'training.dialogue.initialEmotion' },
  { from: 'training.maxTurns', to: 'training.dialogue.maxTurns' },
  { from: 'training.think', to: 'training.dialogue.think' },
];

function isMapping(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The key that `key` set to `value` now is, when `key` is an old one; else null. A key that became
 * a group (`training.credit: turn` -> `training.credit.mode`) is old only when its value is not a mapping.
 */
export function renamedKey(key: string, value: unknown): string | null {
  const move = DEPRECATED_KEYS.find((d) => d.from === key);
  if (move === undefined) return null;
  return move.to.startsWith(`${move.from}.`) && isMapping(value) ? null : move.to;
}

/**
 * The key a `--set` key now is, and the old key it was written under; null when it is current. Besides the
 * keys `renamedKey` knows, a key inside a group that moved whole is renamed by its prefix
 * (`training.optimizerRetry.initialIntervalMs` -> `training.trainer.retry.initialIntervalMs`).
 */
export function renamedSetKey(key: string, value: unknown): { key: string; from: string } | null {
  const exact = renamedKey(key, value);
  if (exact !== null) return { key: exact, from: key };
  const move = DEPRECATED_KEYS.find((d) => key.startsWith(`${d.from}.`) && !d.to.startsWith(`${d.from}.`));
  return move === undefined ? null : { key: move.to + key.slice(move.from.length), from: move.from };
}

export function deprecationWarning(from: string): string {
  const move = DEPRECATED_KEYS.find((d) => d.from === from);
  return `${from} is deprecated: write ${move?.to ?? from}`;
}

/** Old keys that became groups first: the keys moved into a group need it to be a mapping already. */
export const DEPRECATED_KEYS_IN_ORDER = [...DEPRECATED_KEYS].sort(
  (a, b) => Number(b.to.startsWith(`${b.from}.`)) - Number(a.to.startsWith(`${a.from}.`)),
);
