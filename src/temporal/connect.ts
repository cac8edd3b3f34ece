import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { join, resolve } from 'node:path';
import { configuredDataConverter } from '../codec/dataConverter.js';
import type { AttuneConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { DevServer, temporalReachable } from './devServer.js';

export interface TemporalHandle {
  address: string;
  namespace: string;
  client: Client;
  /** Set when this process started the dev server. */
  embedded: DevServer | null;
  uiUrl: string | null;
  close(): Promise<void>;
}

/**
 * Every client Attune creates comes from here, so payloads are encrypted whenever a keys file is
 * configured (ATTUNE_CODEC_KEYS_FILE); workers get the same converter in `src/workers/`.
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

/**
 * The configured Temporal server; without TEMPORAL_ADDRESS, the dev server of `attune dev` if it
 * is up, else an embedded dev server started for this process (state in `<home>/temporal`).
 */
export async function connectTemporal(
  config: AttuneConfig,
  log: Logger,
  options: { startIfMissing: boolean; headless?: boolean } = { startIfMissing: true },
): Promise<TemporalHandle> {
  const namespace = config.temporal.namespace;
  // Read the keys file before starting anything, so a bad one fails the command at once.
  const dataConverter = configuredDataConverter();
  let address = config.temporal.address;
  let embedded: DevServer | null = null;
  let uiUrl: string | null = null;
  if (address) {
    if (!(await temporalReachable(address, 5000))) {
      throw new Error(`Temporal server at ${address} (TEMPORAL_ADDRESS / temporal.address) is not reachable`);
    }
  } else {
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
  }
  const connection = await Connection.connect({ address });
  const client = temporalClient(connection, namespace, dataConverter);
  return {
    address,
    namespace,
    client,
    embedded,
    uiUrl,
    async close() {
      await connection.close();
      if (embedded) await embedded.stop();
    },
  };
}

export async function connectWorkerSide(handle: TemporalHandle): Promise<NativeConnection> {
  return NativeConnection.connect({ address: handle.address });
}
