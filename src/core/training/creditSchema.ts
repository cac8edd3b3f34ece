import { z } from 'zod';
import { CREDIT_MODES } from './credit.js';

/** `training.credit` and its two numbers, as the workflow input takes them (credit.ts: what they mean). */
export const creditSettingsSchema = z.strictObject({
  mode: z.enum(CREDIT_MODES),
  /** Discount per later turn in a turn's return (1: the plain sum of the changes to the end). */
  turnDiscount: z.number().min(0).max(1),
  /** `mixed`: the turn return's weight; the dialogue reward has 1 - weight. */
  weight: z.number().min(0).max(1),
});
