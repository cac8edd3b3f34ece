import { z } from 'zod';
import { dialogueFields, type RolloutSettings } from '../core/rolloutSettingsSchema.js';

type DialogueShape = ReturnType<typeof dialogueFields>;

/** The dialogue settings a section hands the rollout settings (the workflow input's fields of the same names). */
export type DialogueSettings = Pick<RolloutSettings, keyof DialogueShape>;

/**
 * A config section's `dialogue` group: every field dialogueFields declares, with the section's
 * defaults and help text, so a new dialogue setting reaches `rollout`, `training` and `evaluation`
 * from its one declaration. `replaced` swaps a field's declaration where a section words it
 * otherwise (`evaluation.dialogue.think` falls back to rollout's).
 */
export function dialogueGroup<Replaced extends Partial<Record<keyof DialogueShape, z.ZodType>> = Record<never, never>>(
  defaults: Parameters<typeof dialogueFields>[0],
  description: string,
  replaced?: Replaced,
) {
  const shape = { ...dialogueFields(defaults), ...replaced } as Omit<DialogueShape, keyof Replaced> & Replaced;
  const group = z.strictObject(shape);
  // Every field has a default or is optional, which TypeScript cannot see through the generic shape.
  return group.prefault({} as z.input<typeof group>).describe(description);
}
