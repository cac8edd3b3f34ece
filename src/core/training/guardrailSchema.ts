import { z } from 'zod';

/** The signals a guardrail may watch (guardrails.ts: where each comes from). */
export const GUARD_SIGNALS = [
  'reward',
  'replyLengthMean',
  'replyLengthStd',
  'emptyShare',
  'repetition',
  'distinctBigrams',
  'malformedShare',
  'evalChange',
] as const;
export type GuardSignal = (typeof GUARD_SIGNALS)[number];

const name = z.string().min(1).max(64);
const action = z.enum(['warn', 'pause']);
const signal = z.enum(GUARD_SIGNALS);

export const guardrailSchema = z.discriminatedUnion('kind', [
  /** The step's signal is above (or below) a value. */
  z.strictObject({ kind: z.literal('above'), name, action, signal, value: z.number() }),
  z.strictObject({ kind: z.literal('below'), name, action, signal, value: z.number() }),
  /** The signal is at least `factor` times what it was `steps` steps ago ("reply length doubled"). */
  z.strictObject({
    kind: z.literal('growth'),
    name,
    action,
    signal,
    steps: z.number().int().min(1),
    factor: z.number().positive(),
  }),
  /** The mean reward rose by more than `rise` over the last `steps` steps while the last two evaluations fell. */
  z.strictObject({
    kind: z.literal('rewardUpEvalDown'),
    name,
    action,
    steps: z.number().int().min(1),
    rise: z.number(),
  }),
  /**
   * Over the last `evaluations` evaluations the training simulator's score rose by at least `rise`
   * while a held-out simulator's fell by at least `fall` (Sentient points): the policy learnt the
   * training simulator, not empathy. Trips nothing without held-out simulators.
   */
  z.strictObject({
    kind: z.literal('heldOutGapWidens'),
    name,
    action,
    evaluations: z.number().int().min(2),
    rise: z.number().min(0),
    fall: z.number().min(0),
  }),
  /**
   * Capability retention (`training.evalSuites`): a suite's score fell below the base policy's by
   * more than `points` percentage points with the intervals taken into account (the base's lower
   * 95 % bound above the current upper bound by more than `points`; retention.ts). Not a default.
   */
  z.strictObject({
    kind: z.literal('capabilityDrop'),
    name,
    action,
    points: z.number().min(0).max(100),
  }),
]);
export type Guardrail = z.infer<typeof guardrailSchema>;
