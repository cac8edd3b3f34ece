/**
 * The dialogue settings by name, with their types and how each reads in a report. `dialogueFields`
 * (rolloutSettingsSchema.ts) declares their zod schemas, help and defaults; the workflow bundle is
 * zod-free, so the workflows and what they import (the evaluation report, the manifest) and the
 * renderers read the names and words here. `dialogueFields` is typed to declare exactly these, so tsc
 * fails when the two drift, and an entry without words fails it too.
 */
export interface DialogueValues {
  initialEmotion: number;
  maxTurns: number;
  think: boolean;
}

export type DialogueKey = keyof DialogueValues;

interface Words<V> {
  /** A row's label and value (the evaluation manifest's table). */
  label: string;
  value: (value: V) => string;
  /** The setting as a phrase in a line of settings. */
  phrase: (value: V) => string;
}

const WORDS: { [K in DialogueKey]: Words<DialogueValues[K]> } = {
  initialEmotion: { label: 'Initial emotion', value: String, phrase: (v) => `initial emotion ${v}` },
  maxTurns: { label: 'Turns', value: (v) => `at most ${v}`, phrase: (v) => `at most ${v} turns` },
  think: { label: 'Think-then-say', value: String, phrase: (v) => (v ? 'think-then-say' : 'direct replies') },
};

/** The names, in declaration order. */
export const DIALOGUE_KEYS = Object.keys(WORDS) as readonly DialogueKey[];

/** The dialogue settings of `settings` (rollout settings, or anything carrying them), in declaration order. */
export function dialogueSettingsOf<T extends Record<DialogueKey, unknown>>(settings: T): Pick<T, DialogueKey> {
  return Object.fromEntries(DIALOGUE_KEYS.map((key) => [key, settings[key]])) as Pick<T, DialogueKey>;
}

function phraseOf<K extends DialogueKey>(key: K, settings: DialogueValues): string {
  return WORDS[key].phrase(settings[key]);
}

function rowOf<K extends DialogueKey>(key: K, settings: DialogueValues): [string, string] {
  return [WORDS[key].label, WORDS[key].value(settings[key])];
}

/** The dialogue settings as phrases, in declaration order: `initial emotion 50`, `at most 8 turns`, … */
export function dialoguePhrases(settings: DialogueValues): string[] {
  return DIALOGUE_KEYS.map((key) => phraseOf(key, settings));
}

/** The dialogue settings as label/value rows, in declaration order. */
export function dialogueRows(settings: DialogueValues): [string, string][] {
  return DIALOGUE_KEYS.map((key) => rowOf(key, settings));
}
