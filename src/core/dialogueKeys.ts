/**
 * The names of the dialogue settings that `dialogueFields` (rolloutSettingsSchema.ts) declares. The
 * workflow bundle is zod-free, so the workflows and what they import (the evaluation report, the
 * manifest) read the names here; `dialogueFields` is typed to declare exactly these, so tsc fails
 * when the two drift.
 */
export const DIALOGUE_KEYS = ['initialEmotion', 'maxTurns', 'think'] as const;

export type DialogueKey = (typeof DIALOGUE_KEYS)[number];

/** The dialogue settings of `settings` (rollout settings, or anything carrying them), in declaration order. */
export function dialogueSettingsOf<T extends Record<DialogueKey, unknown>>(settings: T): Pick<T, DialogueKey> {
  return Object.fromEntries(DIALOGUE_KEYS.map((key) => [key, settings[key]])) as Pick<T, DialogueKey>;
}
