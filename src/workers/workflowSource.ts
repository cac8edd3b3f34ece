import { join } from 'node:path';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

export const WORKFLOWS_PATH = join(__dirname, '..', 'workflows', 'index.ts');

/** Bundling takes seconds; tests and benchmarks bundle once and share the result. */
export async function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error } as never,
    // Our sources import siblings as `./x.js` (Node ESM style); let webpack find the .ts file.
    webpackConfigHook: (config) => ({
      ...config,
      resolve: { ...config.resolve, extensionAlias: { '.js': ['.ts', '.js'] } },
    }),
  });
}
