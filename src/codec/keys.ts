import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';

/** The environment variable that names the keys file; unset means payloads are not encrypted. */
export const CODEC_KEYS_ENV = 'ATTUNE_CODEC_KEYS_FILE';

/** AES-256 keys are 32 bytes. */
export const KEY_BYTES = 32;

export class CodecKeysError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CodecKeysError';
  }
}

/** Standard base64 (RFC 4648 section 4, padded): Buffer.from would silently skip anything else. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const keyEntrySchema = z.strictObject({
  id: z
    .string()
    .min(1, { message: 'the key id is empty', abort: true })
    .max(64, 'the key id is longer than 64 characters')
    .regex(/^[A-Za-z0-9._-]+$/, 'the key id may hold only letters, digits, ".", "_" and "-"'),
  key: z
    .string()
    .regex(BASE64, { message: 'the key is not standard base64', abort: true })
    .superRefine((b64, ctx) => {
      const bytes = Buffer.from(b64, 'base64').length;
      if (bytes !== KEY_BYTES)
        ctx.addIssue({ code: 'custom', message: `the key must be base64 of ${KEY_BYTES} bytes, got ${bytes} bytes` });
    }),
});

const keysFileSchema = z
  .strictObject({ keys: z.array(keyEntrySchema).min(1, 'the list is empty: add at least one key') })
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    file.keys.forEach((entry, i) => {
      if (seen.has(entry.id))
        ctx.addIssue({ code: 'custom', path: ['keys', i, 'id'], message: `duplicate key id "${entry.id}"` });
      seen.add(entry.id);
    });
  });

export type KeysFile = z.infer<typeof keysFileSchema>;

/**
 * Every key of a keys file: the last one encrypts, any of them decrypts, so a new key is added
 * at the end and old payloads stay readable.
 */
export interface CodecKeyRing {
  /** Where the keys came from, for error messages. */
  source: string;
  encryptKeyId: string;
  keys: ReadonlyMap<string, Buffer>;
}

/** "keys[1] (id "k2"): the key must be ..." for each issue, so the bad entry is easy to find. */
function describeKeyIssues(error: z.ZodError, raw: unknown): string[] {
  return error.issues.map((issue) => {
    const [top, index] = issue.path;
    if (top === 'keys' && typeof index === 'number') {
      const entry = (raw as { keys?: unknown[] }).keys?.[index];
      const id = typeof entry === 'object' && entry !== null ? (entry as { id?: unknown }).id : undefined;
      return `keys[${index}]${typeof id === 'string' && id !== '' ? ` (id "${id}")` : ''}: ${issue.message}`;
    }
    return `${issue.path.length > 0 ? issue.path.join('.') : 'top level'}: ${issue.message}`;
  });
}

/** Validates the parsed JSON of a keys file; `source` names the file in every error. */
export function keyRingFrom(raw: unknown, source: string): CodecKeyRing {
  const parsed = keysFileSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = describeKeyIssues(parsed.error, raw);
    throw new CodecKeysError(
      `${source}: bad payload keys file (expected {"keys": [{"id": "k1", "key": "<base64 of ${KEY_BYTES} bytes>"}, ...]}):\n  ${lines.join('\n  ')}`,
    );
  }
  const keys = new Map(parsed.data.keys.map((k) => [k.id, Buffer.from(k.key, 'base64')] as const));
  return { source, encryptKeyId: parsed.data.keys[parsed.data.keys.length - 1]!.id, keys };
}

export function loadKeyRing(file: string): CodecKeyRing {
  const path = resolve(file);
  if (!existsSync(path)) throw new CodecKeysError(`${path}: no such payload keys file (${CODEC_KEYS_ENV})`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new CodecKeysError(`${path}: the payload keys file is not JSON: ${(error as Error).message}`);
  }
  return keyRingFrom(raw, path);
}

/**
 * The key ring named by ATTUNE_CODEC_KEYS_FILE, else by `configFile` (temporal.codec.keysFile), or
 * null when neither is set (payloads in plain text). The variable wins, as environment variables
 * win over config files everywhere else.
 */
export function configuredKeyRing(env: NodeJS.ProcessEnv = process.env, configFile?: string): CodecKeyRing | null {
  const file = env[CODEC_KEYS_ENV] || configFile;
  return file ? loadKeyRing(file) : null;
}
