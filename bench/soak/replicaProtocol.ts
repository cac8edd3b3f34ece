import { z } from 'zod';

/** One policy answer a fake replica gave, as its process logs it (bench/soak/replicaHost.ts). */
export const replicaAnswerSchema = z.object({
  atMs: z.number(),
  /** The weight version the replica served when it answered. */
  version: z.string(),
  paused: z.boolean(),
  answer: z.string(),
});
export type ReplicaAnswer = z.infer<typeof replicaAnswerSchema>;

/** A fake replica's `GET /state` on its control port. */
export const replicaStateSchema = z.object({
  version: z.string(),
  paused: z.boolean(),
  /** `/resume` calls still to fail. */
  failResumesLeft: z.number().int(),
  /** `/resume` calls failed on request since the process started. */
  resumesFailed: z.number().int(),
  /** Full-weight reloads (`/collective_rpc reload_weights`) since the process started. */
  reloads: z.number().int(),
});
export type ReplicaState = z.infer<typeof replicaStateSchema>;

/** What a replica appends to each policy answer: the version that sampled it. */
export const servedTag = (version: string): string => ` [served ${version}]`;
