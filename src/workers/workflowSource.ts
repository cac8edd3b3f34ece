import { join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { bundleWorkflowCode, type BundleOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { configuredDataConverter } from '../codec/dataConverter.js';

export const WORKFLOWS_PATH = join(__dirname, '..', 'workflows', 'index.ts');

/** Bundler options for the workflow code: the Worker's `bundlerOptions` and `bundleWorkflows` use the same. */
export const workflowBundlerOptions: Pick<BundleOptions, 'webpackConfigHook'> = {
  // Our sources import siblings as `./x.js` (Node ESM style); let webpack find the .ts file.
  webpackConfigHook: (config) => ({
    ...config,
    resolve: { ...config.resolve, extensionAlias: { '.js': ['.ts', '.js'] } },
  }),
  // No `preloadModules`: when it was tried the bundle still held zod, whose v4 schemas define methods
  // lazily and failed on first use once the SDK had frozen them. The bundle is zod-free now (a lint
  // test keeps it so), and preloading is worth measuring again.
};

/**
 * Bundling takes seconds; tests and benchmarks bundle once and share the result. The bundle holds
 * the data converter's failure converter (workflow code converts its own failures), as a worker
 * given `workflowsPath` would bundle it.
 */
export async function bundleWorkflows(
  workflowsPath: string = WORKFLOWS_PATH,
  dataConverter: DataConverter | undefined = configuredDataConverter(),
): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath,
    ...(dataConverter?.failureConverterPath ? { failureConverterPath: dataConverter.failureConverterPath } : {}),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error } as never,
    ...workflowBundlerOptions,
  });
}
