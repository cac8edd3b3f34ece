import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { capabilityReportKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import { capabilitySuiteRun } from '../config/capabilitySuiteRun.js';
import { policyBaseUrlForVersions } from '../config/evaluationInputFromConfig.js';
import { rolloutSettingsFromConfig } from '../config/rolloutSettingsFromConfig.js';
import type { AttuneConfig } from '../config/schema.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import {
  capabilityEvaluationInputSchema,
  capabilityReportSchema,
  type CapabilityEvaluationInput,
  type CapabilityReport,
  type CapabilitySummary,
} from '../core/capability/capabilityReport.js';
import type { CapabilitySuite } from '../core/capability/capabilitySuites.js';
import { nameProblem } from '../core/names.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { capabilityEvaluation } from '../workflows/capabilityEvaluation.js';
import { evaluationProgressQuery, type EvaluationProgress } from '../workflows/evaluation.js';
import type { FrontendLink } from './frontendLink.js';
import { followWorkflow, type FollowedWorkflow } from './workflowFollowing.js';

export interface CapabilityRequest {
  suite: CapabilitySuite;
  /** A policy version such as `run@12`, as `attune eval --policy` takes it; default: the configured policy. */
  policy?: string;
  evalId?: string;
  /** Only these problem ids (in this order); default the whole data set. */
  only?: string[];
  runName?: string | null;
  step?: number | null;
}

/**
 * The suite run's input, built on the client: the vendored data set is read and its hash checked
 * here, once, and the policy is chosen exactly as for the Sentient evaluation (buildEvaluationInput).
 */
export function buildCapabilityInput(config: AttuneConfig, request: CapabilityRequest): CapabilityEvaluationInput {
  const nameIssue = request.evalId !== undefined ? nameProblem(request.evalId) : null;
  if (nameIssue !== null) throw new Error(`evaluation name "${request.evalId}": ${nameIssue}`);
  const run = capabilitySuiteRun(request.suite, request.only);
  const withPolicy: AttuneConfig = request.policy
    ? { ...config, policy: { ...config.policy, baseURL: policyBaseUrlForVersions(config), model: request.policy } }
    : config;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').replace(/Z$/, '');
  return capabilityEvaluationInputSchema.parse({
    evalId: request.evalId ?? `eval-${request.suite}-${stamp}`,
    ...run,
    settings: rolloutSettingsFromConfig(withPolicy),
    seed: config.evaluation.seed,
    concurrency: config.evaluation.concurrency,
    runName: request.runName ?? null,
    step: request.step ?? null,
  });
}

export async function startCapabilityEvaluation(
  client: Client,
  config: AttuneConfig,
  input: CapabilityEvaluationInput,
) {
  return client.workflow.start(capabilityEvaluation, {
    taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
    workflowId: input.evalId,
    args: [input],
    // A finished run of this id is attached to (its report), never run again.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.kind, value: 'capability-evaluation' },
      ...(input.runName ? [{ key: SEARCH_ATTRIBUTES.runName, value: input.runName }] : []),
    ],
  });
}

/** Starts the suite run, or attaches to the one with that id; an id of another kind of workflow is refused. */
export async function startOrAttachCapabilityEvaluation(
  client: Client,
  config: AttuneConfig,
  input: CapabilityEvaluationInput,
): Promise<{ handle: WorkflowHandle<typeof capabilityEvaluation>; attached: boolean }> {
  try {
    return { handle: await startCapabilityEvaluation(client, config, input), attached: false };
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    const handle = client.workflow.getHandle<typeof capabilityEvaluation>(input.evalId);
    const { type } = await handle.describe();
    if (type !== 'capabilityEvaluation')
      throw new Error(`"${input.evalId}" already names a ${type} workflow, not a suite run: choose another name`);
    return { handle, attached: true };
  }
}

/** The run's progress (the Sentient evaluation's query, counting problems) until it ends, and its summary. */
export function followCapabilityEvaluation(
  link: FrontendLink,
  evalId: string,
  pollMs: number,
): FollowedWorkflow<EvaluationProgress, CapabilitySummary> {
  const handle = (client: Client) => client.workflow.getHandle<typeof capabilityEvaluation>(evalId);
  return followWorkflow(
    link,
    { result: (client) => handle(client).result(), query: (client) => handle(client).query(evaluationProgressQuery) },
    pollMs,
  );
}

/** The full report a suite run wrote to the artifact store. */
export async function loadCapabilityReport(store: ArtifactStore, evalId: string): Promise<CapabilityReport> {
  return capabilityReportSchema.parse(await store.getJson<unknown>(capabilityReportKey(evalId)));
}
