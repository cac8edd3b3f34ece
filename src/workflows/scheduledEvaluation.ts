import { executeChild, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RolloutQueueActivities } from '../activities/index.js';
import type { TrainerEndpoint } from '../trainer/trainerClient.js';
import type { CapabilitySuiteRun, CapabilitySummary } from '../core/capability/capabilityReport.js';
import type { EvaluationInput } from '../core/evaluationInput.js';
import { capabilityEvaluation } from './capabilityEvaluation.js';
import { evaluation, type EvaluationSummary } from './evaluation.js';

export interface ScheduledEvaluationInput {
  schedule: string;
  /** The evaluation to run; its evalId is replaced per firing. */
  evaluation: EvaluationInput;
  /** Evaluate this run's latest published version, resolved when the schedule fires. */
  run?: { name: string; trainer: TrainerEndpoint } | null;
  /** Capability suites scored after the Sentient evaluation on the same version (`--suites`); absent: none. */
  suites?: CapabilitySuiteRun[];
}

/** What a firing returns: the Sentient evaluation's headline, and each suite's when it scored some. */
export type ScheduledEvaluationSummary = EvaluationSummary & { suites?: CapabilitySummary[] };

/** What a Temporal Schedule starts: resolves the policy version at fire time, then runs the evaluation as a child. */
export async function scheduledEvaluation(input: ScheduledEvaluationInput): Promise<ScheduledEvaluationSummary> {
  const activities = proxyActivities<RolloutQueueActivities>({
    taskQueue: input.evaluation.settings.artifactsTaskQueue,
    startToCloseTimeout: '2 minutes',
    retry: { maximumAttempts: 20, maximumInterval: '1 minute' },
  });
  let settings = input.evaluation.settings;
  let step: number | null = input.evaluation.step ?? null;
  if (input.run) {
    const version = await activities.latestPolicyVersion({ trainer: input.run.trainer, runName: input.run.name });
    settings = { ...settings, policy: { ...settings.policy, model: version } };
    step = Number(version.slice(version.lastIndexOf('@') + 1));
  }
  // Schedules suffix the workflow id with the firing time: one evaluation id per firing.
  const evalId = `${workflowInfo().workflowId}-eval`;
  const runName = input.run?.name ?? input.evaluation.runName ?? null;
  const summary = await executeChild(evaluation, {
    workflowId: evalId,
    taskQueue: workflowInfo().taskQueue,
    args: [{ ...input.evaluation, evalId, settings, step, runName }],
  });
  if (!input.suites || input.suites.length === 0) return summary;
  // The same version as the Sentient score's, each suite a child of its own; a failed one fails the firing, visibly.
  const suites = await Promise.all(
    input.suites.map((run) =>
      executeChild(capabilityEvaluation, {
        workflowId: `${evalId}-${run.suite}`,
        taskQueue: workflowInfo().taskQueue,
        args: [
          {
            evalId: `${evalId}-${run.suite}`,
            ...run,
            settings,
            seed: input.evaluation.seed,
            concurrency: input.evaluation.concurrency,
            runName,
            step,
          },
        ],
      }),
    ),
  );
  return { ...summary, suites };
}
