import { TestWorkflowEnvironment } from '@temporalio/testing';
import { defaultPayloadConverter, type DataConverter, type Payload } from '@temporalio/common';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { configuredDataConverter } from '../../src/codec/dataConverter.js';
import { findTemporalCli } from '../../src/temporal/cliBinary.js';
import { DEV_SERVER_QUEUE_TUNING } from '../../src/temporal/devServer.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../src/temporal/searchAttributes.js';
import { bundleWorkflows, WORKFLOWS_PATH } from '../../src/workers/workflowSource.js';
import { clusterAddress, usesPostgresCluster } from './temporalCluster.js';

let envPromise: Promise<TestWorkflowEnvironment> | null = null;
/** By failure converter: the one thing of a data converter that goes into the bundle. */
const bundles = new Map<string, Promise<WorkflowBundleWithSourceMap>>();

/**
 * One real dev server (the CLI binary, not a mock) shared by the suite; started on first use. Its
 * client encrypts payloads when ATTUNE_CODEC_KEYS_FILE is set, like the workers the rigs start.
 * With ATTUNE_TEST_TEMPORAL=postgres, a connection to the running cluster on PostgreSQL instead.
 */
export function sharedTestEnv(): Promise<TestWorkflowEnvironment> {
  if (!envPromise) {
    const dataConverter = configuredDataConverter();
    if (usesPostgresCluster()) {
      envPromise = TestWorkflowEnvironment.createFromExistingServer({
        address: clusterAddress(),
        namespace: 'default',
        ...(dataConverter ? { client: { dataConverter } } : {}),
      });
      return envPromise;
    }
    envPromise = TestWorkflowEnvironment.createLocal({
      ...(dataConverter ? { client: { dataConverter } } : {}),
      server: {
        executable: { type: 'existing-path', path: findTemporalCli() },
        searchAttributes: ALL_SEARCH_ATTRIBUTES,
        extraArgs: ['--log-level', 'error', ...DEV_SERVER_QUEUE_TUNING],
      },
    });
  }
  return envPromise;
}

/** Bundled once per failure converter: bundling takes seconds. */
export function sharedWorkflowBundle(
  dataConverter: DataConverter | undefined = configuredDataConverter(),
): Promise<WorkflowBundleWithSourceMap> {
  const key = dataConverter?.failureConverterPath ?? '';
  let bundle = bundles.get(key);
  if (!bundle) {
    bundle = bundleWorkflows(WORKFLOWS_PATH, dataConverter);
    bundles.set(key, bundle);
  }
  return bundle;
}

export async function teardownSharedTestEnv(): Promise<void> {
  if (envPromise) {
    const env = await envPromise;
    envPromise = null;
    await env.teardown();
  }
}

/** A payload as the server stores it (read raw, e.g. from `describe().raw`), through the configured codec to its value. */
export async function storedPayloadValue<T>(payload: Payload): Promise<T> {
  let decoded = [payload];
  for (const codec of [...(configuredDataConverter()?.payloadCodecs ?? [])].reverse())
    decoded = await codec.decode(decoded);
  return defaultPayloadConverter.fromPayload<T>(decoded[0]!);
}
