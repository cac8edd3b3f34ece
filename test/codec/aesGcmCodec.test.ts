import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { AesGcmPayloadCodec, PayloadDecryptionError } from '../../src/codec/aesGcmCodec.js';
import { keyRingFrom } from '../../src/codec/keys.js';
import { keyFor } from './keyFiles.js';

const ring = (ids: string[], source = 'keys.json') =>
  keyRingFrom({ keys: ids.map((id) => ({ id, key: keyFor(id) })) }, source);
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const SECRET = { hiddenIntention: 'She wants someone to say one bad day does not define her' };

describe('AES-256-GCM payload codec', () => {
  it('round-trips payloads, metadata included, and hides both', async () => {
    const codec = new AesGcmPayloadCodec(ring(['k1']));
    const plain = defaultPayloadConverter.toPayload(SECRET);
    const [sealed] = await codec.encode([plain]);
    assert.equal(text(sealed!.metadata!.encoding), 'binary/encrypted');
    assert.equal(text(sealed!.metadata!['encryption-key-id']), 'k1');
    assert.ok(!text(sealed!.data).includes('bad day'));
    assert.ok(!text(sealed!.data).includes('json/plain'));
    const [opened] = await codec.decode([sealed!]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(opened!), SECRET);
    assert.equal(text(opened!.metadata!.encoding), 'json/plain');
  });

  it('uses a fresh 12-byte nonce per payload', async () => {
    const codec = new AesGcmPayloadCodec(ring(['k1']));
    const plain = defaultPayloadConverter.toPayload(SECRET);
    const [a, b] = await codec.encode([plain, plain]);
    assert.notDeepEqual(Buffer.from(a!.data!).subarray(0, 12), Buffer.from(b!.data!).subarray(0, 12));
    assert.notDeepEqual(Buffer.from(a!.data!), Buffer.from(b!.data!));
  });

  it('passes payloads that are not encrypted through decode (histories from before the codec)', async () => {
    const codec = new AesGcmPayloadCodec(ring(['k1']));
    const plain = defaultPayloadConverter.toPayload(SECRET);
    assert.deepEqual(await codec.decode([plain]), [plain]);
  });

  it('rotation: payloads written under k1 still decode after k2 is added; new ones use k2', async () => {
    const [old] = await new AesGcmPayloadCodec(ring(['k1'])).encode([defaultPayloadConverter.toPayload(SECRET)]);
    const rotated = new AesGcmPayloadCodec(ring(['k1', 'k2']));
    assert.deepEqual(defaultPayloadConverter.fromPayload((await rotated.decode([old!]))[0]!), SECRET);
    const [fresh] = await rotated.encode([defaultPayloadConverter.toPayload(SECRET)]);
    assert.equal(text(fresh!.metadata!['encryption-key-id']), 'k2');
  });

  it('a payload under a key id the file lacks fails naming that id and the file', async () => {
    const [old] = await new AesGcmPayloadCodec(ring(['k1'])).encode([defaultPayloadConverter.toPayload(SECRET)]);
    const without = new AesGcmPayloadCodec(ring(['k2'], '/etc/attune/keys.json'));
    await assert.rejects(
      without.decode([old!]),
      (error: unknown) =>
        error instanceof PayloadDecryptionError &&
        /key id "k1", which is not in \/etc\/attune\/keys\.json \(it holds "k2"\)/.test(error.message),
    );
  });

  it('a different key under the same id, or an altered payload, fails naming the key id', async () => {
    const [sealed] = await new AesGcmPayloadCodec(ring(['k1'])).encode([defaultPayloadConverter.toPayload(SECRET)]);
    const impostor = new AesGcmPayloadCodec(
      keyRingFrom({ keys: [{ id: 'k1', key: randomBytes(32).toString('base64') }] }, 'other.json'),
    );
    await assert.rejects(impostor.decode([sealed!]), /key id "k1" does not decrypt with key "k1" of other\.json/);
    const data = Buffer.from(sealed!.data!);
    data[20] = data[20]! ^ 1;
    const altered: Payload = { ...sealed!, data };
    await assert.rejects(new AesGcmPayloadCodec(ring(['k1'])).decode([altered]), /key id "k1" does not decrypt/);
  });
});
