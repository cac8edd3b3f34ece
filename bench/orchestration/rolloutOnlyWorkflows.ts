/**
 * Experiment entry for `--bundle rollout-only`: a workflow bundle holding the rollout workflow only,
 * to measure what the other workflows in src/workflows/index.ts cost each rollout. (With
 * reuseV8Context, the worker evaluates every module reachable from the bundle's entry once per
 * workflow execution, module-level zod schemas included.)
 */
export { rollout, rolloutProgressQuery } from '../../src/workflows/rollout.js';
