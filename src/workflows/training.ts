import {
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  proxyActivities,
  upsertSearchAttributes,
  workflowInfo,
  ActivityFailure,
  ApplicationFailure,
} from '@temporalio/workflow';
import type { OptimizerQueueActivities, RolloutQueueActivities } from '../activities/index.js';
import type { OptimizerStepResult } from '../activities/optimizer.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { liveHyperparameters } from '../core/training/liveOverrides.js';
import {
  evaluatesAfterStep,
  plannedRolloutsOf,
  stepEvaluationId,
  stepRolloutSettings,
  stepScenarioIds,
} from '../core/training/stepPlan.js';
import { stepEvalSummary, stepMetricsRecord } from '../core/training/stepRecord.js';
import { minGroupSize, type StepSurvivors } from '../core/training/stepRollouts.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import {
  completeStep,
  initialTrainingState,
  runIsOver,
  type TrainingResult,
  type TrainingState,
} from '../core/training/trainingState.js';
import { LIMITS } from '../config/limits.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { evaluation } from './evaluation.js';
import { failureMessage } from './fanOut.js';
import { TrainingControl } from './trainingControl.js';
import { runStepRollouts } from './trainingRollouts.js';
import { trackStep } from './trainingTracking.js';

export type { TrainingPhase, TrainingResult, TrainingState, TrainingStatus } from '../core/training/trainingState.js';
export { pauseUpdate, resumeUpdate, setUpdate, stopUpdate, trainingStatusQuery } from './trainingControl.js';

export interface TrainingInput {
  settings: TrainingSettings;
  state?: TrainingState;
}

export function trainingWorkflowId(runName: string): string {
  return `train-${runName}`;
}

/** Scenario listing, publishing and metrics: small I/O on the artifacts queue (ordinary, queued activities). */
function bookkeepingActivities(settings: TrainingSettings) {
  return proxyActivities<RolloutQueueActivities>({
    taskQueue: settings.rollout.artifactsTaskQueue,
    startToCloseTimeout: LIMITS.artifactActivityTimeoutMs,
    // No attempt limit (omitted): bookkeeping outlives any transient failure.
    retry: { maximumInterval: '1 minute' },
  });
}

function optimizerActivities(settings: TrainingSettings) {
  return proxyActivities<OptimizerQueueActivities>({
    taskQueue: settings.trainer.optimizerTaskQueue,
    startToCloseTimeout: settings.trainer.stepTimeoutMs,
    heartbeatTimeout: settings.trainer.heartbeatTimeoutMs,
    // The trainer may be restarting: keep asking; its exactly-once contract makes that safe.
    retry: {
      initialInterval: '2 seconds',
      maximumInterval: '1 minute',
      nonRetryableErrorTypes: ['TrainerRejected', 'TrainerStepConflict', 'EmptyStep', 'TrainerBadResponse'],
    },
  });
}

/** The optimizer activity's non-retryable failure when the trainer's state directory is full (HTTP 507). */
const TRAINER_DISK_FULL = 'TrainerDiskFull';

type Bookkeeping = ReturnType<typeof bookkeepingActivities>;
type Optimizer = ReturnType<typeof optimizerActivities>;

/**
 * An RLVER run: each step samples scenarios from (seed, step), runs their dialogues as child
 * workflows (bounded), sends them to the optimizer (exactly once, keyed by run and step),
 * publishes the new weights, records metrics, then continues as new with a small state.
 */
export async function training(input: TrainingInput): Promise<TrainingResult> {
  const settings = input.settings;
  const state = input.state ?? initialTrainingState(settings.publish.baseVersion);
  const bookkeeping = bookkeepingActivities(settings);
  const optimizer = optimizerActivities(settings);
  const control = new TrainingControl(settings, state);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'training' },
    { key: SEARCH_ATTRIBUTES.runName, value: settings.runName },
    { key: SEARCH_ATTRIBUTES.step, value: state.step - 1 },
  ]);

  if (!state.initialized) {
    await ensureTrainerRun(optimizer, settings);
    state.initialized = true;
  }
  if (runIsOver(state, control.inForce().steps)) return control.finish(state.stopRequested);

  // Paused between steps: wait before starting the next one.
  if (state.paused) {
    control.setPhase('paused');
    await control.pauseLifted();
    if (state.stopRequested) return control.finish(true);
  }

  const step = state.step;
  // A step the previous run of this workflow left under way continues where it stopped.
  const resumed = state.stepInProgress?.step === step ? state.stepInProgress : null;
  const startedAt = resumed?.startedAt ?? Date.now();
  control.setPhase('rollouts');
  const chosen =
    resumed?.chosen ?? stepScenarioIds(settings, step, await bookkeeping.listScenarioIds(settings.scenarioDir));
  const planned = plannedRolloutsOf(settings, step, chosen);
  const rolloutSettings =
    resumed?.rolloutSettings ?? stepRolloutSettings(settings.rollout, state.version, state.live.temperature);
  const outcomes = await runStepRollouts({ settings, state, control, step, planned, rolloutSettings, resumed });
  if (outcomes === null) return control.finish(true);
  if ('suspended' in outcomes) {
    state.stepInProgress = { step, startedAt, chosen, rolloutSettings, ...outcomes.suspended };
    await condition(allHandlersFinished);
    return continueAsNew<typeof training>({ settings, state });
  }
  delete state.stepInProgress;
  const survivors = outcomes.survivors(minGroupSize(settings.algorithm, settings.samplesPerScenario));
  // runStepRollouts waits for the operator until some survive; this only guards that promise.
  if (survivors.kept.length === 0)
    throw ApplicationFailure.nonRetryable(`step ${step}: no rollout survived to train on`, 'NoRolloutSurvived');

  control.setPhase('optimizing');
  const applied = await optimizeStepWithOperator(optimizer, settings, state, control, step, survivors);
  if (applied === null) return control.finish(true);

  control.setPhase('publishing');
  state.version = await publishStep(bookkeeping, settings, step, applied);

  const evalSummary = await evaluateStep(settings, control, step, state.version);

  control.setPhase('recording');
  await recordStep(bookkeeping, settings, state, {
    step,
    startedAt,
    policyVersion: rolloutSettings.policy.model,
    survivors,
    applied,
    evalSummary,
  });
  await trackStep(settings, state, control, step);

  if (runIsOver(state, control.inForce().steps)) return control.finish(state.stopRequested);
  // Let update handlers finish, then start the next step with a fresh history.
  await condition(allHandlersFinished);
  return continueAsNew<typeof training>({ settings, state });
}

/** Creates the trainer's run before the first step (a repeat confirms the same config). */
async function ensureTrainerRun(optimizer: Optimizer, settings: TrainingSettings): Promise<void> {
  await optimizer.ensureTrainerRun({
    trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
    runName: settings.runName,
    algorithm: settings.algorithm,
    baseModel: settings.trainer.baseModel,
    lora: settings.trainer.lora,
    hyperparameters: settings.trainer.hyperparameters,
    seed: settings.seed,
  });
}

/**
 * The step's optimizer call; a full trainer disk waits for the operator (free space, then
 * `attune resume`) and posts the same step again, which the trainer applies at most once.
 * Null when the operator stopped the run instead.
 */
async function optimizeStepWithOperator(
  optimizer: Optimizer,
  settings: TrainingSettings,
  state: TrainingState,
  control: TrainingControl,
  step: number,
  survivors: StepSurvivors,
): Promise<OptimizerStepResult | null> {
  for (;;) {
    try {
      return await optimizeStep(optimizer, settings, state, step, survivors);
    } catch (error) {
      const diskFull = trainerDiskFull(error);
      if (diskFull === null) throw error;
      if (!(await control.resumedByOperator(`step ${step}: optimizer step not applied: ${diskFull}`))) return null;
      control.setPhase('optimizing');
    }
  }
}

/** The trainer's message (it names the state directory) when the step failed on a full disk. */
function trainerDiskFull(error: unknown): string | null {
  return error instanceof ActivityFailure &&
    error.cause instanceof ApplicationFailure &&
    error.cause.type === TRAINER_DISK_FULL
    ? error.cause.message
    : null;
}

/** One optimizer step on the kept dialogues, with the operator's hyperparameters if any were set. */
function optimizeStep(
  optimizer: Optimizer,
  settings: TrainingSettings,
  state: TrainingState,
  step: number,
  survivors: StepSurvivors,
) {
  const hyperparameters = liveHyperparameters(state.live);
  return optimizer.applyOptimizerStep({
    trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
    runName: settings.runName,
    step,
    rollouts: survivors.optimizerRollouts,
    ...(hyperparameters ? { hyperparameters } : {}),
    // Several beats per timeout, so one late beat does not fail a healthy step.
    heartbeatEveryMs: Math.max(500, Math.min(10_000, Math.floor(settings.trainer.heartbeatTimeoutMs / 4))),
  });
}

/** Makes the step's weights the policy the next step samples from; returns its version name. */
async function publishStep(
  bookkeeping: Bookkeeping,
  settings: TrainingSettings,
  step: number,
  applied: OptimizerStepResult,
): Promise<string> {
  const version = settings.publish.mode === 'trainer' ? `${settings.runName}@${step}` : applied.version;
  await bookkeeping.publishPolicyVersion({
    mode: settings.publish.mode,
    policyBaseURL: settings.publish.policyBaseURL,
    apiKeyEnv: settings.rollout.policy.apiKeyEnv,
    version,
    exportPath: applied.exportPath,
  });
  return version;
}

/** Evaluates the new version when it is due; a failed evaluation is reported, not fatal to training. */
async function evaluateStep(
  settings: TrainingSettings,
  control: TrainingControl,
  step: number,
  version: string,
): Promise<StepMetricsRecord['eval']> {
  const inForce = control.inForce();
  if (
    !evaluatesAfterStep(step, inForce.evalEvery, inForce.steps) ||
    !settings.evalSettings ||
    settings.evalScenarios.length === 0
  )
    return undefined;
  control.setPhase('evaluating');
  const evalId = stepEvaluationId(settings.runName, step);
  try {
    const summary = await executeChild(evaluation, {
      workflowId: evalId,
      taskQueue: workflowInfo().taskQueue,
      args: [
        {
          evalId,
          scenarioDir: settings.evalScenarioDir,
          scenarios: settings.evalScenarios,
          source: 'eval split',
          settings: {
            ...settings.evalSettings,
            policy: { ...settings.evalSettings.policy, baseURL: settings.publish.policyBaseURL, model: version },
          },
          seed: settings.seed,
          concurrency: settings.evalConcurrency,
          runName: settings.runName,
          step,
        },
      ],
    });
    return stepEvalSummary(evalId, summary);
  } catch (error) {
    control.report(`evaluation ${evalId} failed: ${failureMessage(error)}`);
    return undefined;
  }
}

/** Appends the step's metrics line, moves the run to the next step, and tags the run with the step's reward. */
async function recordStep(
  bookkeeping: Bookkeeping,
  settings: TrainingSettings,
  state: TrainingState,
  done: {
    step: number;
    startedAt: number;
    policyVersion: string;
    survivors: StepSurvivors;
    applied: OptimizerStepResult;
    evalSummary: StepMetricsRecord['eval'];
  },
): Promise<void> {
  const { step, survivors, evalSummary } = done;
  const record = stepMetricsRecord({
    runName: settings.runName,
    step,
    algorithm: settings.algorithm,
    time: new Date().toISOString(),
    policyVersion: done.policyVersion,
    kept: survivors.kept,
    failed: survivors.decision.failed,
    dropped: survivors.decision.dropped.length,
    trainer: done.applied.metrics,
    ...(evalSummary ? { eval: evalSummary } : {}),
  });
  await bookkeeping.recordStepMetrics(record);
  completeStep(state, step, record, Date.now() - done.startedAt);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.step, value: step },
    { key: SEARCH_ATTRIBUTES.meanReward, value: record.reward.mean },
  ]);
}
