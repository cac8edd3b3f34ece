import { z } from 'zod';
import { CREDIT_MODES, FINAL_CREDIT } from './credit.js';

/**
 * `training.credit`, as the config writes it and the workflow input takes it (credit.ts: what the
 * settings mean). Defaults are RLVER's one reward per dialogue (FINAL_CREDIT).
 */
export const creditSettingsSchema = z.strictObject({
  mode: z
    .enum(CREDIT_MODES)
    .default(FINAL_CREDIT.mode)
    .describe(
      "How a dialogue's reward is shared over its turns: `final` (RLVER), `turn` (each turn's emotion change, discounted to the end) or `mixed`.",
    ),
  turnDiscount: z
    .number()
    .min(0)
    .max(1)
    .default(FINAL_CREDIT.turnDiscount)
    .describe(
      "`turn`/`mixed`: discount per later turn in a turn's return (1: the plain sum of the changes to the end).",
    ),
  weight: z
    .number()
    .min(0)
    .max(1)
    .default(FINAL_CREDIT.weight)
    .describe("`mixed`: the turn return's weight (the dialogue reward gets 1 - weight)."),
});
