import { z } from 'zod';
import { SIMULATOR_DIFFICULTIES } from '../difficulty.js';
import type { DifficultyPhase } from './difficultyMix.js';

/** Shares may miss 1 by this much (0.1 + 0.2 + 0.7 is not exactly 1 in floating point). */
const SUM_TOLERANCE = 1e-9;

const share = z
  .number()
  .min(0)
  .max(1)
  .optional()
  .describe("This level's share of the phase's scenario groups; the phase's shares sum to 1 (absent: 0).");

/** A phase of `training.difficultyMix` (difficultyMix.ts): from a step on, the share of each level. */
export const difficultyPhaseSchema = z
  .strictObject({
    fromStep: z.number().int().min(1).describe('The step the phase begins at (the first phase: 1).'),
    simple: share,
    normal: share,
    hard: share,
  })
  .superRefine((phase, ctx) => {
    const sum = SIMULATOR_DIFFICULTIES.reduce((total, level) => total + (phase[level] ?? 0), 0);
    if (Math.abs(sum - 1) > SUM_TOLERANCE)
      ctx.addIssue({
        code: 'custom',
        message: `the shares of simple, normal and hard sum to ${sum}; they must sum to 1 (e.g. { fromStep: 1, simple: 0.2, normal: 0.5, hard: 0.3 })`,
      });
  }) satisfies z.ZodType<DifficultyPhase>;

/** The simulator levels of a run's training dialogues: phases, the first from step 1, each later one from a later step. */
export const difficultyMixSchema = z
  .array(difficultyPhaseSchema, {
    error: 'a list of phases, e.g. [{ fromStep: 1, simple: 0.2, normal: 0.5, hard: 0.3 }]',
  })
  .min(1, 'at least one phase, from step 1')
  .max(64)
  .superRefine((phases, ctx) => {
    if (phases[0] && phases[0].fromStep !== 1)
      ctx.addIssue({
        code: 'custom',
        path: [0, 'fromStep'],
        message: `the first phase starts at step 1, not ${phases[0].fromStep}`,
      });
    for (let i = 1; i < phases.length; i++)
      if (phases[i]!.fromStep <= phases[i - 1]!.fromStep)
        ctx.addIssue({
          code: 'custom',
          path: [i, 'fromStep'],
          message: `phases go forward: step ${phases[i]!.fromStep} is not after step ${phases[i - 1]!.fromStep}`,
        });
  });
