import { z } from 'zod';

/** What a fake server host (fakeServerHost.ts) answers on `GET /state`. */
export const fakeHostStateSchema = z.object({
  /** Each successful adapter load in order: the name and the digest of the adapter directory it was given. */
  loads: z.array(z.object({ name: z.string(), digest: z.string().nullable() })),
  policyCalls: z.number(),
  /** Each chat completion answered 200, in order. */
  answered: z.array(
    z.object({
      /** The fake's request key: a hash of the role, the messages and the seed (a call made again has the same). */
      fingerprint: z.string(),
      role: z.string(),
      /** The calling host's address (`?` when its connection was not seen). */
      from: z.string(),
      /** When it was answered (epoch ms). */
      atMs: z.number(),
      /** Whether the answer went to a client still connected (a killed worker's socket is closed first). */
      delivered: z.boolean(),
    }),
  ),
});
export type FakeHostState = z.infer<typeof fakeHostStateSchema>;
