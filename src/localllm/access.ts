/** Who may use the local model server: loopback by default, a bearer token beyond it. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { LOCAL_LLM_TOKEN_ENV } from '../config/localLlmEndpoint.js';

export class InsecureBindError extends Error {
  constructor(host: string) {
    super(
      `refusing to serve on ${host}, which is not a loopback address, without a token: anyone who reaches the ` +
        `port could use the model. Set ${LOCAL_LLM_TOKEN_ENV} (clients then send it as a bearer token) or bind 127.0.0.1.`,
    );
    this.name = 'InsecureBindError';
  }
}

export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./i.test(host);
  return false;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Checks `Authorization: Bearer <token>` in constant time; with no token configured, everyone passes. */
export function bearerCheck(token: string | undefined): (req: IncomingMessage) => boolean {
  if (token === undefined || token === '') return () => true;
  const expected = digest(token);
  return (req) => {
    const header = req.headers.authorization;
    // Printable ASCII only: anything else (a non-ASCII byte, a control character) is a plain refusal.
    const match = typeof header === 'string' ? /^Bearer ([\x21-\x7e]+)$/.exec(header) : null;
    const given = digest(match?.[1] ?? '');
    // Digests have one length, so the comparison never throws and takes the same time for every input.
    return timingSafeEqual(given, expected) && match !== null;
  };
}
