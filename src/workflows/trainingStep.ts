import {
  executeChild,
  proxyActivities,
  upsertSearchAttributes,
  workflowInfo,
  ActivityFailure,
  ApplicationFailure,
} from '@temporalio/workflow';
import type { OptimizerQueueActivities, RolloutQueueActivities } from '../activities/index.js';
import type { PublishResult } from '../activities/runBookkeeping.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { liveHyperparameters } from '../core/training/liveOverrides.js';
import { evaluatesAfterStep, evaluationSettingsAt, stepEvaluationId } from '../core/training/stepPlan.js';
import { stepEvalSummary, stepMetricsRecord } from '../core/training/stepRecord.js';
import { rewardEnvironment } from '../core/evaluationManifest.js';
import { sharesAt } from '../core/training/difficultyMix.js';
import { minGroupSize, type StepRolloutOutcomes, type StepSurvivors } from '../core/training/stepRollouts.js';
import type { GuardTrip } from '../core/training/guardrails.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import type { StepTake } from '../core/training/dialogueStreamState.js';
import type { OptimizedStep, OptimizerStepResult, StepToApply } from '../core/training/optimizedStep.js';
import { completeStep, type TrainingState } from '../core/training/trainingState.js';
import { LIMITS } from '../config/limits.js';
import { OPTIMIZER_RETRY } from '../core/training/optimizerRetry.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { evaluation } from './evaluation.js';
import { failureMessage } from './fanOut.js';
import type { TrainingControl } from './trainingControl.js';
import { publishInputOf } from './publishInput.js';
import { publishToReplicas } from './replicaPublish.js';
import { evaluateSuites } from './trainingCapability.js';
import { checkGuardrails, waitOnGuardrail } from './trainingGuardrails.js';
import { trackStep } from './trainingTracking.js';

/** Scenario listing, publishing and metrics: small I/O on the artifacts queue (ordinary, queued activities). */
export function bookkeepingActivities(settings: TrainingSettings) {
  return proxyActivities<RolloutQueueActivities>({
    taskQueue: settings.rollout.artifactsTaskQueue,
    startToCloseTimeout: LIMITS.artifactActivityTimeoutMs,
    // No attempt limit (omitted): bookkeeping outlives any transient failure.
    retry: { maximumInterval: '1 minute' },
  });
}

export function optimizerActivities(settings: TrainingSettings) {
  const waits = settings.trainer.retry ?? OPTIMIZER_RETRY;
  return proxyActivities<OptimizerQueueActivities>({
    taskQueue: settings.trainer.optimizerTaskQueue,
    startToCloseTimeout: settings.trainer.stepTimeoutMs,
    heartbeatTimeout: settings.trainer.heartbeatTimeoutMs,
    // The trainer may be restarting: keep asking; its exactly-once contract makes that safe.
    retry: {
      initialInterval: waits.initialIntervalMs,
      maximumInterval: waits.maximumIntervalMs,
      nonRetryableErrorTypes: ['TrainerRejected', 'TrainerStepConflict', 'EmptyStep', 'TrainerBadResponse'],
    },
  });
}

/**
 * The optimizer activity's failures that wait for the operator: the trainer's state directory is
 * full (HTTP 507), or the trainer answered the step with the same server error attempt after attempt.
 */
const OPERATOR_FAILURES: readonly string[] = ['TrainerDiskFull', 'TrainerKeepsFailing'];

/**
 * The publishing activity's failures that wait for the operator: the policy server refused the
 * load (vLLM: rank above --max-lora-rank, no adapter at the path, wrong key) or the key.
 */
const PUBLISH_OPERATOR_FAILURES: readonly string[] = ['PublishRefused', 'PublishRejected'];

export type Bookkeeping = ReturnType<typeof bookkeepingActivities>;
export type Optimizer = ReturnType<typeof optimizerActivities>;

/** What applying a step needs from the run. */
export interface StepContext {
  settings: TrainingSettings;
  state: TrainingState;
  control: TrainingControl;
  bookkeeping: Bookkeeping;
  optimizer: Optimizer;
}

export type { OptimizedStep, StepToApply };

/** The step's dialogues kept for training (some must survive). */
export function survivorsOf({ settings }: StepContext, step: number, outcomes: StepRolloutOutcomes): StepSurvivors {
  const survivors = outcomes.survivors(minGroupSize(settings.algorithm, settings.samplesPerScenario));
  // The rollouts wait for the operator until some survive; this only guards that promise.
  if (survivors.kept.length === 0)
    throw ApplicationFailure.nonRetryable(`step ${step}: no rollout survived to train on`, 'NoRolloutSurvived');
  return survivors;
}

/**
 * Trains on a step's dialogues (exactly once, keyed by run and step), then finishes it (`finishStep`).
 * False when the operator stopped the run while the step waited for them.
 */
export async function applyStep(ctx: StepContext, done: StepToApply): Promise<boolean> {
  const applied = await optimizeStepWithOperator(ctx, done);
  return applied !== null && (await finishStep(ctx, { ...done, applied }));
}

/**
 * Publishes an optimized step's weights, evaluates them when due, records the step's metrics and
 * tracks them. False when the operator stopped the run while the step waited for them.
 */
export async function finishStep(ctx: StepContext, optimized: OptimizedStep): Promise<boolean> {
  const { settings, state, control, bookkeeping } = ctx;
  const { step, applied } = optimized;
  control.setPhase('publishing');
  const published = await publishStepWithOperator(ctx, step, applied);
  if (published === null) return false;
  state.version = published.version;

  const evalSummary = await evaluateStep(settings, control, step, state.version);
  const capability = await evaluateSuites(settings, state, control, step, state.version);

  control.setPhase('recording');
  const pause = await recordStep(bookkeeping, settings, state, {
    ...optimized,
    evalSummary,
    ...(capability ? { capability } : {}),
    publishLatencyMs: published.latencyMs,
  });
  await trackStep(settings, state, control, step);
  return pause === null || (await waitOnGuardrail(state, control, pause));
}

/** Creates the trainer's run before the first step (a repeat confirms the same config). */
export async function ensureTrainerRun(optimizer: Optimizer, settings: TrainingSettings): Promise<void> {
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
 * The step's optimizer call; a full trainer disk, or a trainer failing the step with the same error again and again,
 * waits for the operator (free space or fix it, then `attune resume`) and posts the same step again, which the trainer applies at most once.
 * Null when the operator stopped the run instead.
 */
export async function optimizeStepWithOperator(
  ctx: StepContext,
  done: StepToApply,
): Promise<OptimizerStepResult | null> {
  ctx.control.setPhase('optimizing');
  for (;;) {
    try {
      return await optimizeStep(ctx, done);
    } catch (error) {
      const reason = operatorFailure(error, OPERATOR_FAILURES);
      if (reason === null) throw error;
      if (!(await ctx.control.resumedByOperator(`step ${done.step}: optimizer step not applied: ${reason}`)))
        return null;
      ctx.control.setPhase('optimizing');
    }
  }
}

/**
 * Publishes the step's weights; a load the policy server refuses waits for the operator (fix the
 * server or the key, then `attune resume` loads it again). Null when the operator stopped the run instead.
 */
async function publishStepWithOperator(
  { bookkeeping, settings, control }: StepContext,
  step: number,
  applied: OptimizerStepResult,
): Promise<PublishedStep | null> {
  if (settings.publish.mode === 'vllm' && settings.publish.replicas) {
    const published = await publishToReplicas(settings, control, step);
    if (published === null) return null;
    return { version: published.version, latencyMs: published.publishMs };
  }
  for (;;) {
    try {
      return await publishStep(bookkeeping, settings, control, step, applied);
    } catch (error) {
      const reason = operatorFailure(error, PUBLISH_OPERATOR_FAILURES);
      if (reason === null) throw error;
      if (!(await control.resumedByOperator(`step ${step}: weights not published: ${reason}`))) return null;
      control.setPhase('publishing');
    }
  }
}

/** The activity's message (a full disk's names the state directory, a refused load the endpoint) when the operator must act. */
function operatorFailure(error: unknown, types: readonly string[]): string | null {
  return error instanceof ActivityFailure &&
    error.cause instanceof ApplicationFailure &&
    types.includes(error.cause.type ?? '')
    ? error.cause.message
    : null;
}

/** One optimizer step on the kept dialogues, with the operator's hyperparameters if any were set. */
function optimizeStep({ optimizer, settings, state }: StepContext, done: StepToApply) {
  const hyperparameters = liveHyperparameters(state.live);
  return optimizer.applyOptimizerStep({
    trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
    runName: settings.runName,
    step: done.step,
    rollouts: done.survivors.optimizerRollouts,
    policyVersion: done.sampledFrom,
    ...(settings.credit ? { credit: settings.credit } : {}),
    ...(hyperparameters ? { hyperparameters } : {}),
    ...(settings.trainer.sameErrorAttempts !== undefined
      ? { sameErrorAttempts: settings.trainer.sameErrorAttempts }
      : {}),
    // Several beats per timeout, so one late beat does not fail a healthy step.
    heartbeatEveryMs: Math.max(500, Math.min(10_000, Math.floor(settings.trainer.heartbeatTimeoutMs / 4))),
  });
}

interface PublishedStep {
  version: string;
  /** The publish's start to the version's first served token (null: not measured, see StepMetricsRecord). */
  latencyMs: number | null;
}

/**
 * Makes the step's weights the policy the next step samples from. With vLLM, the run's versions
 * older than the newest `publish.keep` (and than `maxStaleness` allows rollouts to sample) are
 * unloaded; one vLLM would not unload is reported, not fatal.
 */
async function publishStep(
  bookkeeping: Bookkeeping,
  settings: TrainingSettings,
  control: TrainingControl,
  step: number,
  applied: OptimizerStepResult,
): Promise<PublishedStep> {
  const version = settings.publish.mode === 'trainer' ? `${settings.runName}@${step}` : applied.version;
  const published = await bookkeeping.publishPolicyVersion(publishInputOf(settings, version, applied.exportPath));
  // Histories recorded before the result was an object answered the version name alone.
  if (typeof (published as PublishResult | string) === 'string') return { version, latencyMs: null };
  if (published.unloadFailures.length > 0)
    control.report(`step ${step}: old adapters not unloaded: ${published.unloadFailures.join('; ')}`);
  // Results recorded before the publisher timed itself carry no duration on one clock.
  return { version, latencyMs: published.publishMs ?? null };
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
          settings: evaluationSettingsAt(settings.evalSettings, settings.publish.policyBaseURL, version),
          seed: settings.seed,
          concurrency: settings.evalConcurrency,
          runName: settings.runName,
          step,
          ...(settings.evalSimulators ? { simulators: settings.evalSimulators } : {}),
        },
      ],
    });
    return stepEvalSummary(evalId, summary);
  } catch (error) {
    control.report(`evaluation ${evalId} failed: ${failureMessage(error)}`);
    return undefined;
  }
}

/**
 * Appends the step's metrics line (with the guardrails that tripped), moves the run to the next
 * step, and tags the run with the step's reward; returns a pausing guardrail's trip, if any.
 */
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
    capability?: StepMetricsRecord['capability'];
    publishLatencyMs: number | null;
    take?: StepTake;
  },
): Promise<GuardTrip | null> {
  const { step, survivors, evalSummary } = done;
  const computed = stepMetricsRecord({
    runName: settings.runName,
    step,
    algorithm: settings.algorithm,
    time: new Date().toISOString(),
    policyVersion: done.policyVersion,
    kept: survivors.kept,
    failed: survivors.decision.failed,
    dropped: survivors.decision.dropped.length,
    trainer: done.applied.metrics,
    publishLatencyMs: done.publishLatencyMs,
    ...(done.applied.commitToAnswerMs !== undefined ? { commitToAnswerMs: done.applied.commitToAnswerMs } : {}),
    ...(done.applied.signals ? { replies: done.applied.signals } : {}),
    ...(state.guard?.lastEvalScore !== undefined ? { previousEvalScore: state.guard.lastEvalScore } : {}),
    ...(settings.credit ? { credit: settings.credit } : {}),
    ...(evalSummary ? { eval: evalSummary } : {}),
    ...(done.capability ? { capability: done.capability } : {}),
    environment: rewardEnvironment(
      settings.rollout,
      settings.difficultyMix ? sharesAt(settings.difficultyMix, step) : undefined,
    ),
  });
  const { record, pause } = checkGuardrails(
    settings,
    state,
    done.take ? { ...computed, dialogues: dialoguesOfTake(done.take) } : computed,
  );
  await bookkeeping.recordStepMetrics(record);
  completeStep(state, step, record, Date.now() - done.startedAt);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.step, value: step },
    { key: SEARCH_ATTRIBUTES.meanReward, value: record.reward.mean },
  ]);
  return pause;
}

/** A take as the step's record lists it: all but the step, which the record names already. */
function dialoguesOfTake({ step: _step, ...dialogues }: StepTake): NonNullable<StepMetricsRecord['dialogues']> {
  return dialogues;
}
