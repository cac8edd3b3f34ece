import { z } from 'zod';
import { dialogueBounds, type RolloutSettings } from '../core/rolloutSettingsSchema.js';

/**
 * The settings of one dialogue, as each config section that runs dialogues writes them (`rollout`,
 * `training`, `evaluation`) and as the rollout workflow takes them: declared once here, with help
 * text once; each section gives its own defaults (SAGE's protocol, RLVER's training simulator).
 */
export function dialogueFields(defaults: { initialEmotion: number; maxTurns: number }) {
  return {
    initialEmotion: dialogueBounds.initialEmotion
      .default(defaults.initialEmotion)
      .describe(
        "The simulated user's emotion when a dialogue starts, 0-100 (SAGE: 40; RLVER's training simulator: 30).",
      ),
    maxTurns: dialogueBounds.maxTurns
      .default(defaults.maxTurns)
      .describe('Assistant turns after which a dialogue ends (SAGE: 10; RLVER training: 8).'),
    think: dialogueThink
      .default(false)
      .describe(
        'Think-then-say: the policy writes `<think>…</think>` then its reply; the simulator sees the reply only.',
      ),
  };
}

/** `think` as a section that falls back to another's declares it (`evaluation.think`: default rollout.think). */
export const dialogueThink = z.boolean();

/** The dialogue settings a section hands the rollout settings (the workflow input's fields of the same names). */
export type DialogueSettings = Pick<RolloutSettings, keyof ReturnType<typeof dialogueFields>>;

const DIALOGUE_KEYS = Object.keys(dialogueFields({ initialEmotion: 0, maxTurns: 1 })) as (keyof DialogueSettings)[];

/** The dialogue settings of a config section: every field dialogueFields declares, picked by name. */
export function dialogueOf(section: DialogueSettings): DialogueSettings {
  return Object.fromEntries(DIALOGUE_KEYS.map((key) => [key, section[key]])) as DialogueSettings;
}
