import { executeChild, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RolloutQueueActivities } from '../activities/index.js';
import type { TrainerEndpoint } from '../trainer/trainerClient.js';
import type { EvaluationInput } from '../core/evaluationInput.js';
import { evaluation, type EvaluationSummary } from './evaluation.js';

export interface ScheduledEvaluationInput {
  schedule: string;
  /** The evaluation to run; its evalId is replaced per firing. */
  evaluation: EvaluationInput;
  /** Evaluate this run's latest published version, resolved when the schedule fires. */
  run?: { name: string; trainer: TrainerEndpoint } | null;
}

/** What a Temporal Schedule starts: resolves the policy version at fire time, then runs the evaluation as a child. */
export async function scheduledEvaluation(input: ScheduledEvaluationInput): Promise<EvaluationSummary> {
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
  return executeChild(evaluation, {
    workflowId: evalId,
    taskQueue: workflowInfo().taskQueue,
    args: [
      { ...input.evaluation, evalId, settings, step, runName: input.run?.name ?? input.evaluation.runName ?? null },
    ],
  });
}
