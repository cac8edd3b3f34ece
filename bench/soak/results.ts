import { z } from 'zod';
import { SOAK_FAULT_KINDS } from './plan.js';

const rss = z.record(z.string(), z.object({ median: z.number(), max: z.number() }));
const size = z.object({ events: z.number().int(), bytes: z.number().int() });

/** The soak's results file (bench/results/soak*.json), as the smoke test reads it back. */
export const soakResultsSchema = z.object({
  seed: z.number().int(),
  steps: z.number().int(),
  quick: z.boolean(),
  /** Test-only planted faults (ATTUNE_SOAK_PLANT); empty in a real soak. */
  planted: z.array(z.string()),
  window: z.number().int(),
  settings: z.array(z.string()),
  planned: z.array(
    z.object({
      n: z.number().int(),
      kind: z.enum(SOAK_FAULT_KINDS),
      step: z.number().int(),
      replica: z.number().int(),
    }),
  ),
  faults: z.array(
    z.object({
      kind: z.enum(SOAK_FAULT_KINDS),
      step: z.number().int(),
      injected: z.boolean(),
      struckAtStep: z.number().int().nullable(),
      recoverySeconds: z.number().nullable(),
      detail: z.string(),
      error: z.string().optional(),
    }),
  ),
  injected: z.number().int(),
  checksHeld: z.boolean(),
  checks: z.array(z.object({ name: z.string(), ok: z.boolean(), detail: z.string() })),
  operatorResumes: z.number().int(),
  windows: z.array(
    z.object({
      fromStep: z.number().int(),
      toStep: z.number().int(),
      samples: z.number().int(),
      maxTrainerStateBytes: z.number(),
      maxDownloadBytes: z.number(),
      medianTrainerStateBytes: z.number(),
      medianDownloadBytes: z.number(),
      rssMiB: rss,
      maxHistory: z.object({ training: size, rollout: size }),
    }),
  ),
  retained: z.object({ checkpoints: z.number().int(), exports: z.number().int(), downloads: z.number().int() }),
  /** Bytes per entry of the trainer's run directory at the end (what the state directory holds). */
  trainerRunBytes: z.record(z.string(), z.number()),
  stepsPerMinute: z.number(),
  wallS: z.number(),
});
export type SoakResults = z.infer<typeof soakResultsSchema>;
