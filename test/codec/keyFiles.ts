import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { encryptingDataConverter } from '../../src/codec/dataConverter.js';
import { loadKeyRing } from '../../src/codec/keys.js';

/** Fresh random keys, by id, reused across files so rotation can be tested. */
const keys = new Map<string, string>();

export function keyFor(id: string): string {
  let key = keys.get(id);
  if (!key) {
    key = randomBytes(32).toString('base64');
    keys.set(id, key);
  }
  return key;
}

/** A keys file in the documented format holding `ids` in order (the last one encrypts). */
export function writeKeysFile(ids: string[], dir = mkdtempSync(join(tmpdir(), 'attune-keys-'))): string {
  const file = join(dir, `keys-${ids.join('-')}.json`);
  writeFileSync(file, JSON.stringify({ keys: ids.map((id) => ({ id, key: keyFor(id) })) }, null, 2), { mode: 0o600 });
  return file;
}

export function converterWith(ids: string[]): DataConverter {
  return encryptingDataConverter(loadKeyRing(writeKeysFile(ids)));
}
