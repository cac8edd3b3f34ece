import { existsSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
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
 * TEST ONLY: workflow interceptor modules (absolute paths, joined by the platform's path delimiter)
 * bundled into the workflows of a worker that bundles at start. It lets the rolling-upgrade test give
 * build B a real workflow code change without a second copy of the sources. Read from the
 * environment here and nowhere else (no config key, no flag); off unless set.
 */
export const TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES_ENV = 'ATTUNE_TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES';

export function testOnlyWorkflowInterceptorModules(env: NodeJS.ProcessEnv = process.env): string[] {
  const paths = (env[TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES_ENV] ?? '').split(delimiter).filter((p) => p !== '');
  for (const path of paths) {
    if (!isAbsolute(path) || !existsSync(path))
      throw new Error(`${TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES_ENV}: "${path}" is not an absolute path to a file`);
  }
  return paths;
}

/**
 * Bundling takes seconds; tests and benchmarks bundle once and share the result. The bundle holds
 * the data converter's failure converter (workflow code converts its own failures), as a worker
 * given `workflowsPath` would bundle it.
 */
export async function bundleWorkflows(
  workflowsPath: string = WORKFLOWS_PATH,
  dataConverter: DataConverter | undefined = configuredDataConverter(),
  workflowInterceptorModules: string[] = [],
): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath,
    ...(workflowInterceptorModules.length > 0 ? { workflowInterceptorModules } : {}),
    ...(dataConverter?.failureConverterPath ? { failureConverterPath: dataConverter.failureConverterPath } : {}),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error } as never,
    ...workflowBundlerOptions,
  });
}
