import { z } from 'zod';

/** What a fake server host (fakeServerHost.ts) answers on `GET /state`. */
export const fakeHostStateSchema = z.object({
  /** Each successful adapter load in order: the name and the digest of the adapter directory it was given. */
  loads: z.array(z.object({ name: z.string(), digest: z.string().nullable() })),
  policyCalls: z.number(),
});
export type FakeHostState = z.infer<typeof fakeHostStateSchema>;
