import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { republishVersion } from '../vllm/republish.js';
import { getTrainerRun } from '../trainer/trainerClient.js';
import type { AttuneConfig } from '../config/schema.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import { trainingSettingsFromConfig } from '../config/trainingSettingsFromConfig.js';
import { continuedTrainingState } from '../core/training/trainingState.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { training, trainingWorkflowId, type TrainingResult } from '../workflows/training.js';

export type TrainingHandle = WorkflowHandle<typeof training>;

/** The run of that name, whichever execution of its continue-as-new chain is current. */
export function trainingHandle(client: Client, runName: string): TrainingHandle {
  return client.workflow.getHandle<typeof training>(trainingWorkflowId(runName));
}

/**
 * What starting a run of a given name did:
 * - `started`: no run had that name;
 * - `attached`: the run is under way;
 * - `finished`: the run completed; nothing was started (`result` holds its result, and `note`
 *   says how to train on when more steps were asked for);
 * - `continued`: an ended run goes on from the step after the trainer's last applied one.
 */
export type TrainingStart =
  | { outcome: 'started' | 'attached'; handle: TrainingHandle }
  | { outcome: 'finished'; handle: TrainingHandle; result: TrainingResult; note: string | null }
  | { outcome: 'continued'; handle: TrainingHandle; fromStep: number };

/** A run that failed, was terminated or cancelled, and was not asked to continue. */
export class RunEndedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunEndedError';
  }
}

type ClosedStatus = 'COMPLETED' | 'FAILED' | 'TERMINATED' | 'CANCELLED' | 'TIMED_OUT' | 'CONTINUED_AS_NEW';

async function statusOf(handle: TrainingHandle): Promise<'RUNNING' | ClosedStatus | null> {
  try {
    return (await handle.describe()).status.name as 'RUNNING' | ClosedStatus;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}

async function startExecution(
  client: Client,
  config: AttuneConfig,
  settings: TrainingSettings,
  continueFrom: number | null,
): Promise<TrainingHandle> {
  return client.workflow.start(training, {
    taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
    workflowId: trainingWorkflowId(settings.runName),
    args: [
      continueFrom === null
        ? { settings }
        : { settings, state: continuedTrainingState(settings.runName, settings.publish.baseVersion, continueFrom) },
    ],
    // A closed run of this name is continued only on purpose, never started again from step 1.
    workflowIdReusePolicy: continueFrom === null ? 'REJECT_DUPLICATE' : 'ALLOW_DUPLICATE',
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.kind, value: 'training' },
      { key: SEARCH_ATTRIBUTES.runName, value: settings.runName },
    ],
  });
}

async function appliedSteps(config: AttuneConfig, runName: string): Promise<number> {
  const run = await getTrainerRun({ url: config.trainer.url, tokenEnv: config.trainer.tokenEnv }, runName);
  return run?.step ?? 0;
}

/**
 * Starts the run, or attaches to the one of that name. A completed run is shown, not trained
 * again; an ended run continues only with `continueRun`, from the trainer's applied step + 1.
 */
export async function startOrAttachTraining(
  client: Client,
  config: AttuneConfig,
  runName: string,
  options: { continueRun?: boolean } = {},
): Promise<TrainingStart> {
  const settings = trainingSettingsFromConfig(config, runName);
  const handle = trainingHandle(client, runName);
  const status = await statusOf(handle);
  if (status === null) {
    const started = await startExecution(client, config, settings, null);
    return { outcome: 'started', handle: started };
  }
  if (status === 'RUNNING') return { outcome: 'attached', handle };
  if (status === 'COMPLETED') {
    const result = await handle.result();
    const wantsMore = settings.steps > result.stepsApplied;
    if (!options.continueRun || !wantsMore) {
      const note = wantsMore
        ? `run ${runName} finished after ${result.stepsApplied} step(s); add --continue to train on to step ${settings.steps}`
        : null;
      return { outcome: 'finished', handle, result, note };
    }
  } else if (!options.continueRun) {
    const applied = await appliedSteps(config, runName).catch(() => null);
    const where = applied === null ? '' : ` after the trainer applied ${applied} step(s)`;
    throw new RunEndedError(
      `run ${runName} ended (${status.toLowerCase()})${where}; add --continue to continue it from the next step, or choose another --name`,
    );
  }
  const applied = await appliedSteps(config, runName);
  // vLLM may have restarted (or unloaded it) since: the version the run goes on from is loaded again first.
  if (settings.publish.mode === 'vllm' && applied > 0)
    await republishVersion({
      trainer: { url: config.trainer.url, tokenEnv: config.trainer.tokenEnv },
      runName,
      step: applied,
      policyBaseURL: settings.publish.policyBaseURL,
      apiKeyEnv: settings.rollout.policy.apiKeyEnv,
    });
  const continued = await startExecution(client, config, settings, applied);
  return { outcome: 'continued', handle: continued, fromStep: applied + 1 };
}
