import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { findTemporalCli } from '../../src/temporal/cliBinary.js';
import { DEV_SERVER_QUEUE_TUNING } from '../../src/temporal/devServer.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../src/temporal/searchAttributes.js';
import { bundleWorkflows } from '../../src/workers/workflowSource.js';

let envPromise: Promise<TestWorkflowEnvironment> | null = null;
let bundlePromise: Promise<WorkflowBundleWithSourceMap> | null = null;

/** One real dev server (the CLI binary, not a mock) shared by the suite; started on first use. */
export function sharedTestEnv(): Promise<TestWorkflowEnvironment> {
  envPromise ??= TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: findTemporalCli() },
      searchAttributes: ALL_SEARCH_ATTRIBUTES,
      extraArgs: ['--log-level', 'error', ...DEV_SERVER_QUEUE_TUNING],
    },
  });
  return envPromise;
}

/** Bundled once: bundling takes seconds. */
export function sharedWorkflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundlePromise ??= bundleWorkflows();
  return bundlePromise;
}

export async function teardownSharedTestEnv(): Promise<void> {
  if (envPromise) {
    const env = await envPromise;
    envPromise = null;
    await env.teardown();
  }
}
