import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configuredDataConverter } from '../../src/codec/dataConverter.js';
import { CodecKeysError, configuredKeyRing, loadKeyRing } from '../../src/codec/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { commonWorkerOptions } from '../../src/workers/llmIoWorkers.js';
import { keyFor, writeKeysFile } from './keyFiles.js';

function fileWith(content: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'attune-keys-')), 'keys.json');
  writeFileSync(file, content);
  return file;
}

function rejects(content: string, pattern: RegExp): void {
  const file = fileWith(content);
  assert.throws(
    () => loadKeyRing(file),
    (error: unknown) => {
      assert.ok(error instanceof CodecKeysError, String(error));
      assert.ok(error.message.includes(file), `names the file: ${error.message}`);
      assert.match(error.message, pattern);
      return true;
    },
  );
}

const good = (id: string) => ({ id, key: keyFor(id) });

describe('payload keys file', () => {
  it('reads the documented format: every key decrypts, the last one encrypts', () => {
    const ring = loadKeyRing(writeKeysFile(['k1', 'k2']));
    assert.equal(ring.encryptKeyId, 'k2');
    assert.deepEqual([...ring.keys.keys()], ['k1', 'k2']);
    assert.equal(ring.keys.get('k1')!.toString('base64'), keyFor('k1'));
  });

  it('rejects a key of the wrong length, naming the entry', () => {
    const short = randomBytes(16).toString('base64');
    rejects(
      JSON.stringify({ keys: [good('k1'), { id: 'k2', key: short }] }),
      /keys\[1\] \(id "k2"\): .*32 bytes, got 16/,
    );
  });

  it('rejects a key that is not base64, naming the entry', () => {
    rejects(
      JSON.stringify({ keys: [{ id: 'bad', key: 'not base64 at all!' }] }),
      /keys\[0\] \(id "bad"\): .*not standard base64/,
    );
  });

  it('rejects a duplicate id, naming it', () => {
    rejects(JSON.stringify({ keys: [good('k1'), good('k1')] }), /keys\[1\] \(id "k1"\): duplicate key id "k1"/);
  });

  it('rejects an empty list, other shapes, unknown fields and a file that is not JSON', () => {
    rejects(JSON.stringify({ keys: [] }), /keys: the list is empty/);
    rejects(JSON.stringify([good('k1')]), /expected \{"keys"/);
    rejects(JSON.stringify({ keys: [{ ...good('k1'), note: 'x' }] }), /keys\[0\] \(id "k1"\): .*note/);
    rejects('{"keys": [', /not JSON/);
  });

  it('a missing file is named', () => {
    assert.throws(
      () => loadKeyRing('/nonexistent/attune-keys.json'),
      /\/nonexistent\/attune-keys\.json: no such payload keys file/,
    );
  });

  it('is off unless ATTUNE_CODEC_KEYS_FILE is set', () => {
    assert.equal(configuredKeyRing({}), null);
    assert.equal(configuredDataConverter({}), undefined);
    const converter = configuredDataConverter({ ATTUNE_CODEC_KEYS_FILE: writeKeysFile(['k1']) });
    assert.equal(converter?.payloadCodecs?.length, 1);
    assert.match(converter?.failureConverterPath ?? '', /failureConverter\.ts$/);
  });

  it('temporal.codec.keysFile turns it on too, for workers as well; ATTUNE_CODEC_KEYS_FILE wins over it', () => {
    const fromConfig = writeKeysFile(['k1']);
    const fromEnv = writeKeysFile(['k2']);
    assert.equal(configuredKeyRing({}, fromConfig)?.encryptKeyId, 'k1');
    assert.equal(configuredKeyRing({ ATTUNE_CODEC_KEYS_FILE: fromEnv }, fromConfig)?.encryptKeyId, 'k2');
    assert.throws(
      () => configuredKeyRing({}, '/nonexistent/k.json'),
      /\/nonexistent\/k\.json: no such payload keys file/,
    );
    const config = loadConfig({ env: {}, set: [`temporal.codec.keysFile=${fromConfig}`] });
    const saved = process.env.ATTUNE_CODEC_KEYS_FILE;
    delete process.env.ATTUNE_CODEC_KEYS_FILE;
    try {
      const worker = commonWorkerOptions(
        { connection: {} as never, namespace: 'default', config, store: {} as never },
        1,
      );
      assert.equal(worker.dataConverter?.payloadCodecs?.length, 1);
      const plain = loadConfig({ env: {} });
      assert.equal(
        commonWorkerOptions({ connection: {} as never, namespace: 'default', config: plain, store: {} as never }, 1)
          .dataConverter,
        undefined,
      );
    } finally {
      if (saved !== undefined) process.env.ATTUNE_CODEC_KEYS_FILE = saved;
    }
  });
});
