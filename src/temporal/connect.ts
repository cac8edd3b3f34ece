import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { join, resolve } from 'node:path';
import { configuredDataConverter } from '../codec/dataConverter.js';
import type { AttuneConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import {
  describeConnectionSecurity,
  ignoredWithoutAddress,
  plainConnectionOptions,
  temporalConnectionOptions,
  type TemporalConnectionOptions,
} from './connectionOptions.js';
import { DevServer, temporalReachable } from './devServer.js';
import { ipServerNameProblem, tlsProblem } from './tlsProbe.js';

export interface TemporalHandle {
  address: string;
  /** What worker connections to the same server are made with (TLS, API key): never log it. */
  connectionOptions: TemporalConnectionOptions;
  namespace: string;
  client: Client;
  /** Set when this process started the dev server. */
  embedded: DevServer | null;
  uiUrl: string | null;
  /**
   * A new client on a new connection to the same server (same TLS, API key and data converter), once it
   * has answered one call: for a follower that lost the frontend. The caller closes it.
   */
  connectAgain(): Promise<{ client: Client; close(): Promise<void> }>;
  close(): Promise<void>;
}

/**
 * Every client Attune creates comes from here, so payloads are encrypted whenever a keys file is
 * configured (ATTUNE_CODEC_KEYS_FILE or temporal.codec.keysFile); workers get the same converter in
 * `src/workers/`.
 */
export function temporalClient(
  connection: Connection,
  namespace: string,
  dataConverter: DataConverter | undefined = configuredDataConverter(),
): Client {
  return new Client({ connection, namespace, ...(dataConverter ? { dataConverter } : {}) });
}

export function devServerAddress(config: AttuneConfig): string {
  return `127.0.0.1:${config.temporal.devServer.port}`;
}

/** An error's message and its causes' ("Failed to connect" alone does not say TLS or auth). */
function messageChain(error: unknown): string {
  const parts: string[] = [];
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 4; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (!parts.includes(message)) parts.push(message);
    current = current instanceof Error ? (current as Error & { cause?: unknown }).cause : undefined;
  }
  return parts.join(': ');
}

/** Time for a configured server to answer the first call, TLS handshake included. */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * A client connection that has answered one call. A failure names the address and how it was
 * reached: a TLS or API key problem otherwise reads as a bare UNAVAILABLE or a timeout.
 */
export async function connectClient(
  options: TemporalConnectionOptions,
  timeoutMs = CONNECT_TIMEOUT_MS,
): Promise<Connection> {
  const connection = Connection.lazy({ ...options, connectTimeout: timeoutMs });
  try {
    await connection.ensureConnected();
    return connection;
  } catch (error) {
    await connection.close().catch(() => undefined);
    const tls = (await tlsProblem(options)) ?? ipServerNameProblem(options);
    throw new Error(
      `Temporal server at ${options.address} (TEMPORAL_ADDRESS / temporal.address, ${describeConnectionSecurity(options)}) did not answer within ${timeoutMs} ms: ${messageChain(error)}${tls ? `; ${tls}` : ''}`,
      { cause: error },
    );
  }
}

/**
 * The configured Temporal server (with temporal.tls and temporal.apiKeyEnv); without
 * TEMPORAL_ADDRESS, the dev server of `attune dev` if it is up, else an embedded dev server started
 * for this process (state in `<home>/temporal`). Dev servers are reached in plain gRPC on loopback.
 */
export async function connectTemporal(
  config: AttuneConfig,
  log: Logger,
  options: { startIfMissing: boolean; headless?: boolean } = { startIfMissing: true },
): Promise<TemporalHandle> {
  const namespace = config.temporal.namespace;
  // Read the keys file before starting anything, so a bad one fails the command at once.
  const dataConverter = configuredDataConverter(process.env, config.temporal.codec?.keysFile);
  let address = config.temporal.address;
  let embedded: DevServer | null = null;
  let uiUrl: string | null = null;
  let connectionOptions: TemporalConnectionOptions;
  let connection: Connection;
  if (address) {
    const resolved = temporalConnectionOptions(config.temporal, address);
    for (const warning of resolved.warnings) log.warn(warning);
    connectionOptions = resolved.options;
    connection = await connectClient(connectionOptions);
  } else {
    const ignored = ignoredWithoutAddress(config.temporal);
    if (ignored.length > 0)
      log.warn(
        `${ignored.join(' and ')} apply to temporal.address only: the local dev server is reached in plain gRPC`,
      );
    address = devServerAddress(config);
    if (await temporalReachable(address, 1000)) {
      uiUrl = `http://127.0.0.1:${config.temporal.devServer.uiPort}`;
    } else if (options.startIfMissing) {
      embedded = await DevServer.create({
        home: join(resolve(config.home), 'temporal'),
        port: config.temporal.devServer.port,
        uiPort: config.temporal.devServer.uiPort,
        headless: options.headless ?? false,
        namespace,
      });
      log.info('starting embedded Temporal dev server', { address, db: embedded.dbFile });
      await embedded.start();
      uiUrl = embedded.uiUrl;
    } else {
      throw new Error(`no Temporal server at ${address}: start one with \`attune dev\`, or set TEMPORAL_ADDRESS`);
    }
    connectionOptions = plainConnectionOptions(address);
    connection = await Connection.connect(connectionOptions);
  }
  const client = temporalClient(connection, namespace, dataConverter);
  return {
    address,
    connectionOptions,
    namespace,
    client,
    embedded,
    uiUrl,
    async connectAgain() {
      const fresh = await connectClient(connectionOptions);
      return { client: temporalClient(fresh, namespace, dataConverter), close: () => fresh.close() };
    },
    async close() {
      await connection.close();
      if (embedded) await embedded.stop();
    },
  };
}

/** The workers' connection to the server of `handle`, with the same TLS and API key as its client. */
export async function connectWorkerSide(handle: TemporalHandle): Promise<NativeConnection> {
  const options = handle.connectionOptions;
  try {
    return await NativeConnection.connect(options);
  } catch (error) {
    throw new Error(
      `workers could not connect to the Temporal server at ${options.address} (${describeConnectionSecurity(options)}): ${messageChain(error)}`,
      { cause: error },
    );
  }
}
