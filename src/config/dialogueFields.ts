import { dialogueFields, type RolloutSettings } from '../core/rolloutSettingsSchema.js';

/** The dialogue settings a section hands the rollout settings (the workflow input's fields of the same names). */
export type DialogueSettings = Pick<RolloutSettings, keyof ReturnType<typeof dialogueFields>>;

const DIALOGUE_KEYS = Object.keys(dialogueFields({ initialEmotion: 0, maxTurns: 1 })) as (keyof DialogueSettings)[];

/** The dialogue settings of a config section: every field dialogueFields declares, picked by name. */
export function dialogueOf(section: DialogueSettings): DialogueSettings {
  return Object.fromEntries(DIALOGUE_KEYS.map((key) => [key, section[key]])) as DialogueSettings;
}
