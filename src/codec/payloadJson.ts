import type { Payload } from '@temporalio/common';
import { z } from 'zod';

/**
 * Payloads as the codec server protocol carries them: the proto3 JSON form of `Payloads`, where
 * every bytes field (the data and each metadata value) is base64. Proto3 JSON readers accept the
 * standard and the URL-safe alphabet, padded or not; so does this one.
 */
const base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'not base64');

const jsonPayloadSchema = z.object({
  metadata: z.record(z.string(), base64).nullish(),
  data: base64.nullish(),
});

export const payloadsBodySchema = z.object({ payloads: z.array(jsonPayloadSchema) });

export type JsonPayload = z.infer<typeof jsonPayloadSchema>;

export function payloadFromJson(json: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(Object.entries(json.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: Buffer.from(json.data ?? '', 'base64'),
  };
}

export function payloadToJson(payload: Payload): { metadata: Record<string, string>; data: string } {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([k, v]) => [
        k,
        Buffer.from(v ?? new Uint8Array()).toString('base64'),
      ]),
    ),
    data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
  };
}
