import { z } from 'zod';
import { SIMULATOR_DIFFICULTIES } from './difficulty.js';

export const simulatorDifficultySchema = z.enum(SIMULATOR_DIFFICULTIES);

/** The help text of `simulator.difficulty`, declared once. */
export const DIFFICULTY_HELP =
  "How hard the simulated user is to reach: `simple` takes almost any kind or positive reply as support; `normal` (SAGE's user) weighs comfort and advice and accepts what is reasonable; `hard` accepts only support that fits its emotional needs closely, and may answer with sarcasm. Part of every score's environment: `eval compare` refuses evaluations at different levels. A scenario's own `difficulty` wins over it.";
