import { join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { AesGcmPayloadCodec } from './aesGcmCodec.js';
import { configuredKeyRing, type CodecKeyRing } from './keys.js';

const FAILURE_CONVERTER_PATH = join(__dirname, 'failureConverter.ts');

/** Encrypts every payload, and failure messages and stack traces with them, with the ring's last key. */
export function encryptingDataConverter(ring: CodecKeyRing): DataConverter {
  return { payloadCodecs: [new AesGcmPayloadCodec(ring)], failureConverterPath: FAILURE_CONVERTER_PATH };
}

/**
 * The data converter of every client and worker Attune creates: encrypting when
 * ATTUNE_CODEC_KEYS_FILE (or else `configFile`, temporal.codec.keysFile) names a keys file, the
 * SDK's default otherwise.
 */
export function configuredDataConverter(
  env: NodeJS.ProcessEnv = process.env,
  configFile?: string,
): DataConverter | undefined {
  const ring = configuredKeyRing(env, configFile);
  return ring ? encryptingDataConverter(ring) : undefined;
}
