import { capabilitySuiteRunSchema, type CapabilitySuiteRun } from '../core/capability/capabilityReport.js';
import {
  DEFAULT_DECODING,
  DEFAULT_SANDBOX_TIMEOUT_MS,
  type CapabilitySuite,
} from '../core/capability/capabilitySuites.js';
import { vendoredDataset } from '../scenarios/capabilityDatasets.js';

/**
 * What a suite runs on, however it is started (`attune eval --suite`, a run's `evalSuites`, a
 * schedule): the vendored data set, read and its hash checked here on the client, its problems
 * (all, or `only` these in this order), the suite's decoding and the sandbox's deadline.
 */
export function capabilitySuiteRun(suite: CapabilitySuite, only: readonly string[] = []): CapabilitySuiteRun {
  const { dataset, problems } = vendoredDataset(suite);
  const known = new Set(problems.map((p) => p.id));
  for (const [i, id] of only.entries()) {
    if (!known.has(id)) throw new Error(`problem "${id}" is not in the ${suite} data set (${dataset.file})`);
    if (only.indexOf(id) !== i) throw new Error(`problem "${id}" is listed twice`);
  }
  return capabilitySuiteRunSchema.parse({
    suite,
    dataset,
    problemIds: only.length > 0 ? only : problems.map((p) => p.id),
    decoding: DEFAULT_DECODING[suite],
    sandboxTimeoutMs: DEFAULT_SANDBOX_TIMEOUT_MS,
  });
}
