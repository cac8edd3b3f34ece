import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { CodecKeyRing } from './keys.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class PayloadDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadDecryptionError';
  }
}

const text = (bytes: Uint8Array | null | undefined): string | undefined =>
  bytes ? Buffer.from(bytes).toString('utf8') : undefined;

/**
 * AES-256-GCM over the whole serialized payload (its metadata too, so the original encoding is
 * hidden as well), with a random 96-bit nonce per payload. The data is nonce || ciphertext || tag;
 * the key id travels in the metadata so a rotated key ring still finds the right key. Payloads
 * that are not encrypted pass through decode unchanged: histories written before the codec was
 * turned on stay readable.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  constructor(private readonly ring: CodecKeyRing) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decrypt(payload));
  }

  encrypt(payload: Payload): Payload {
    const keyId = this.ring.encryptKeyId;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.ring.keys.get(keyId)!, nonce);
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const sealed = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from(keyId) },
      data: sealed,
    };
  }

  decrypt(payload: Payload): Payload {
    if (text(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
    const keyId = text(payload.metadata?.[KEY_ID_METADATA]);
    if (keyId === undefined) {
      throw new PayloadDecryptionError(`an encrypted payload has no "${KEY_ID_METADATA}" in its metadata`);
    }
    const key = this.ring.keys.get(keyId);
    if (!key) {
      throw new PayloadDecryptionError(
        `a payload is encrypted with key id "${keyId}", which is not in ${this.ring.source} ` +
          `(it holds ${[...this.ring.keys.keys()].map((id) => `"${id}"`).join(', ')}): add key "${keyId}" back to the file`,
      );
    }
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < NONCE_BYTES + TAG_BYTES) {
      throw new PayloadDecryptionError(
        `a payload encrypted with key id "${keyId}" is truncated (${data.length} bytes)`,
      );
    }
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, NONCE_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadDecryptionError(
        `a payload encrypted with key id "${keyId}" does not decrypt with key "${keyId}" of ${this.ring.source}: ` +
          'the file holds a different key under that id, or the payload was altered',
      );
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}
