import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../config/load.js';
import type { AttuneConfig } from '../config/schema.js';

/** The TLS settings `Connection.connect` and `NativeConnection.connect` both take. */
export interface TemporalTlsOptions {
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
  serverNameOverride?: string;
}

/**
 * What every client and worker connection to one Temporal server is made with. Holds the API key:
 * never log it.
 */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TemporalTlsOptions;
  apiKey?: string;
}

export interface ResolvedConnectionOptions {
  options: TemporalConnectionOptions;
  /** Settings that were ignored or weaken the connection, for the caller to log. */
  warnings: string[];
}

/** Plain connection to a dev server this machine runs on loopback (it has no TLS). */
export function plainConnectionOptions(address: string): TemporalConnectionOptions {
  return { address };
}

function readPemFile(field: string, file: string): Buffer {
  const path = resolve(file);
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : String(error);
    throw new ConfigError(`${field}: cannot read ${path}: ${why}`);
  }
  if (!content.includes('-----BEGIN '))
    throw new ConfigError(`${field}: ${path} is not a PEM file (no -----BEGIN line)`);
  return content;
}

/**
 * The connection options for `temporal.address`: TLS when `temporal.tls` is true or a section, or
 * when `temporal.apiKeyEnv` is set (Temporal Cloud requires TLS) unless `tls: false`; each file
 * read once here, each bad one named with its config key. A missing API key variable is an error
 * naming the variable, so a worker never starts unauthenticated.
 */
export function temporalConnectionOptions(
  temporal: AttuneConfig['temporal'],
  address: string,
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConnectionOptions {
  const warnings: string[] = [];
  const options: TemporalConnectionOptions = { address };
  const { tls, apiKeyEnv } = temporal;
  if (apiKeyEnv !== undefined) {
    const apiKey = env[apiKeyEnv];
    if (apiKey === undefined || apiKey.trim() === '')
      throw new ConfigError(
        `temporal.apiKeyEnv: the environment variable ${apiKeyEnv} is ${apiKey === undefined ? 'not set' : 'empty'}: set it to the Temporal API key`,
      );
    options.apiKey = apiKey.trim();
    if (tls === false)
      warnings.push(`temporal.tls is false: the API key from ${apiKeyEnv} goes to ${address} unencrypted`);
  }
  const tlsOn = tls === undefined ? apiKeyEnv !== undefined : tls !== false;
  if (!tlsOn) return { options, warnings };
  const settings = typeof tls === 'object' ? tls : {};
  const tlsOptions: TemporalTlsOptions = {};
  if (settings.caFile !== undefined)
    tlsOptions.serverRootCACertificate = readPemFile('temporal.tls.caFile', settings.caFile);
  if (settings.certFile !== undefined && settings.keyFile !== undefined)
    tlsOptions.clientCertPair = {
      crt: readPemFile('temporal.tls.certFile', settings.certFile),
      key: readPemFile('temporal.tls.keyFile', settings.keyFile),
    };
  if (settings.serverName !== undefined) tlsOptions.serverNameOverride = settings.serverName;
  options.tls = tlsOptions;
  return { options, warnings };
}

/** Settings that the embedded dev server (plain, loopback) ignores, for a warning. */
export function ignoredWithoutAddress(temporal: AttuneConfig['temporal']): string[] {
  return [
    ...(temporal.tls !== undefined && temporal.tls !== false ? ['temporal.tls'] : []),
    ...(temporal.apiKeyEnv !== undefined ? ['temporal.apiKeyEnv'] : []),
  ];
}

/** "TLS, mTLS, API key" words for error messages about a connection. */
export function describeConnectionSecurity(options: TemporalConnectionOptions): string {
  const parts = [
    options.tls ? (options.tls.clientCertPair ? 'mTLS' : 'TLS') : 'plaintext',
    ...(options.apiKey !== undefined ? ['API key'] : []),
  ];
  return parts.join(' + ');
}
