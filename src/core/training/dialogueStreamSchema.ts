import { z } from 'zod';
import { SIMULATOR_DIFFICULTIES } from '../difficulty.js';
import type { DialogueStreamState, StreamGroup, StreamSample } from './dialogueStream.js';

/**
 * The schema of a dialogue stream's state (dialogueStream.ts), for checking a state read back from
 * JSON (a continue-as-new input, a status query's answer). Apart from the logic, so that the
 * workflow bundle stays free of zod.
 */

const count = z.number().int().min(0);
const version = z.number().int().min(0);
const started = { step: z.number().int().min(1), version };
const finishedAt = { ...started, seq: z.number().int().min(1) };

export const streamSampleSchema = z.discriminatedUnion('state', [
  z.strictObject({ state: z.literal('pending') }),
  z.strictObject({ state: z.literal('running'), ...started }),
  z.strictObject({ state: z.literal('ok'), ...finishedAt, oldest: z.number().int() }),
  z.strictObject({ state: z.literal('stale'), ...finishedAt, oldest: z.number().int() }),
  z.strictObject({ state: z.literal('failed'), ...finishedAt }),
  z.strictObject({ state: z.literal('abandoned'), ...started }),
  z.strictObject({ state: z.literal('cancelled'), ...started }),
]) satisfies z.ZodType<StreamSample>;

export const streamGroupSchema = z.strictObject({
  index: count,
  scenarioId: z.string().min(1),
  difficulty: z.enum(SIMULATOR_DIFFICULTIES).optional(),
  samples: z.array(streamSampleSchema).min(1).max(64),
}) satisfies z.ZodType<StreamGroup>;

export const dialogueStreamStateSchema = z.strictObject({
  runName: z.string().min(1),
  nextGroup: count,
  finishes: count,
  lastStep: count,
  groups: z.array(streamGroupSchema),
  counts: z.strictObject({
    started: count,
    taken: count,
    carriedOver: count,
    droppedStale: count,
    droppedShortGroup: count,
    failed: count,
    abandoned: count,
    cancelled: count,
  }),
  unreported: z.strictObject({
    droppedStale: z.array(z.string()),
    droppedShortGroup: z.array(z.string()),
    failed: z.array(z.string()),
    omitted: count,
  }),
}) satisfies z.ZodType<DialogueStreamState>;
