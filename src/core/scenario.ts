import { z } from 'zod';
import { simulatorDifficultySchema } from './difficultySchema.js';
import { NAME_MAX_LENGTH, SCENARIO_ID_PATTERN, SCENARIO_ID_RULE } from './names.js';

/** The eight goal types of our library; `other` holds imported profiles whose goal is free text. */
export const GOAL_TYPES = [
  'not-my-fault',
  'self-reflection',
  'critical-analysis',
  'deep-empathy',
  'venting',
  'understanding-others',
  'practical-advice',
  'sincere-praise',
] as const;
export const goalTypeSchema = z.enum([...GOAL_TYPES, 'other']);
export type GoalType = z.infer<typeof goalTypeSchema>;

/** SAGE's original personality groups; imported profiles that name another group keep `other`. */
export const PERSONALITY_TYPES = ['negative', 'passive', 'avoidant'] as const;
export const personalitySchema = z.enum([...PERSONALITY_TYPES, 'other']);
export type Personality = z.infer<typeof personalitySchema>;

const text = z.string().trim().min(1, 'must not be empty');

export const personaSchema = z
  .strictObject({
    name: text.optional(),
    age: z.number().int().min(1).max(120).optional(),
    occupation: text.optional(),
    habits: text.optional(),
    speakingStyle: text.optional(),
    /** Free-text profile, used by imported SAGE records whose persona is one paragraph. */
    description: text.optional(),
  })
  .refine((p) => p.name !== undefined || p.description !== undefined, {
    message: 'persona needs a name or a description',
  });

export const reactionsSchema = z.strictObject({
  highEmotion: text,
  mediumEmotion: text,
  lowEmotion: text,
  onTarget: text,
  offTarget: text,
});

export const scenarioSchema = z.strictObject({
  // The file name and part of workflow ids and artifact keys: see names.ts.
  id: z
    .string()
    .max(NAME_MAX_LENGTH, `at most ${NAME_MAX_LENGTH} characters`)
    .regex(SCENARIO_ID_PATTERN, SCENARIO_ID_RULE),
  language: z.enum(['en', 'zh']),
  persona: personaSchema,
  background: text,
  goal: text,
  hiddenIntention: text,
  personality: personalitySchema,
  traits: z.array(text).default([]),
  goalType: goalTypeSchema,
  firstMessage: text.optional(),
  reactions: reactionsSchema.optional(),
  /** The simulated user's level for this scenario, whatever `simulator.difficulty` says; absent: the config's. */
  difficulty: simulatorDifficultySchema.optional(),
  /** Where an imported scenario came from, with the original record kept verbatim. */
  source: z
    .strictObject({
      format: z.string(),
      file: z.string().optional(),
      line: z.number().int().optional(),
      record: z.record(z.string(), z.unknown()),
    })
    .optional(),
});
export type Scenario = z.infer<typeof scenarioSchema>;

/** Formats zod issues as `field.path: message` lines, for errors that name the field. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const where = issue.path.length > 0 ? issue.path.join('.') : '(root)';
    if (issue.code === 'unrecognized_keys') {
      return `${where === '(root)' ? '' : `${where}.`}${issue.keys.join(', ')}: unknown key`;
    }
    return `${where}: ${issue.message}`;
  });
}
