import { executeChild, workflowInfo } from '@temporalio/workflow';
import type { RolloutSettings } from '../core/rolloutSettingsSchema.js';
import { rolloutStartOptions } from '../core/rolloutStart.js';
import { TEMPORAL_LIMITS } from '../core/temporalLimits.js';
import {
  plannedRolloutSettings,
  plannedRolloutsOf,
  rolloutAttempt,
  stepRolloutSettings,
  stepScenarioIds,
  type PlannedRollout,
} from '../core/training/stepPlan.js';
import { minGroupSize, StepRolloutOutcomes } from '../core/training/stepRollouts.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import type { StepInProgress, TrainingState } from '../core/training/trainingState.js';
import { utf8Length } from '../core/transcriptParts.js';
import { boundedFanOut, counted, failureMessage } from './fanOut.js';
import { rollout } from './rollout.js';
import type { TrainingControl } from './trainingControl.js';
import type { StepContext } from './trainingStep.js';

export interface StepRolloutsInput {
  settings: TrainingSettings;
  state: TrainingState;
  control: TrainingControl;
  step: number;
  planned: PlannedRollout[];
  rolloutSettings: RolloutSettings;
  /** The step's progress when an earlier run of this workflow continued as new within the step. */
  resumed: StepInProgress | null;
}

/** The step's rollouts stopped early because the server suggested continue-as-new; carry this on. */
export interface SuspendedStepRollouts {
  suspended: Pick<StepInProgress, 'attempt' | 'pending' | 'outcomes'>;
}

/** A carried step may take this much of the continue-as-new payload; a bigger one finishes in this history. */
export const CARRIED_STEP_BYTES = TEMPORAL_LIMITS.payloadBytes / 2;

/** A step's finished dialogues, and what they sampled. */
export interface RolledOutDialogues {
  outcomes: StepRolloutOutcomes;
  /** Epoch ms the step's rollouts started. */
  startedAt: number;
  chosen: string[];
  /** The version name the dialogues sampled. */
  policyVersion: string;
  /** The step whose weights that version holds (0: the base model). */
  sampledFrom: number;
}

/**
 * The dialogues of `step`, sampling `sampleFrom` (or what the step sampled when an earlier run of
 * the workflow left it under way). The step's progress comes back when the run should continue as
 * new within it; null when the operator stopped the run.
 */
export async function rollOutStep(
  { settings, state, control, bookkeeping }: StepContext,
  step: number,
  sampleFrom: { version: string; step: number },
): Promise<RolledOutDialogues | { suspended: StepInProgress } | null> {
  const resumed = state.stepInProgress?.step === step ? state.stepInProgress : null;
  const startedAt = resumed?.startedAt ?? Date.now();
  control.setPhase('rollouts');
  const chosen =
    resumed?.chosen ?? stepScenarioIds(settings, step, await bookkeeping.listScenarioIds(settings.scenarioDir));
  const planned = plannedRolloutsOf(settings, step, chosen);
  const rolloutSettings =
    resumed?.rolloutSettings ?? stepRolloutSettings(settings.rollout, sampleFrom.version, state.live.temperature);
  const sampledFrom = resumed ? (resumed.sampledFrom ?? step - 1) : sampleFrom.step;
  const outcomes = await runStepRollouts({ settings, state, control, step, planned, rolloutSettings, resumed });
  if (outcomes === null) return null;
  if ('suspended' in outcomes)
    return { suspended: { step, startedAt, chosen, rolloutSettings, sampledFrom, ...outcomes.suspended } };
  // A full-weight run's version is vLLM's weight version; the model name stays the served model's.
  const policyVersion = rolloutSettings.policy.weightVersion ?? rolloutSettings.policy.model;
  return { outcomes, startedAt, chosen, policyVersion, sampledFrom };
}

/**
 * Runs a step's dialogues as child workflows, at most `maxInFlight` at once. When more than
 * `maxFailedShare` fail, or too few survive to train on, the run waits for an operator (fix the
 * endpoint, then `attune resume` retries the failed ones, as new attempts). Null when the operator
 * stopped the run instead. When the server suggests continuing as new (a long step fills the
 * history), no new dialogue starts, those in flight finish, and the step's progress comes back to
 * be carried into the next run.
 */
export async function runStepRollouts(
  input: StepRolloutsInput,
): Promise<StepRolloutOutcomes | SuspendedStepRollouts | null> {
  const { control, planned, settings, step, resumed } = input;
  const outcomes = resumed ? StepRolloutOutcomes.restored(planned, resumed.outcomes) : new StepRolloutOutcomes(planned);
  control.progress.total = planned.length;
  control.progress.done = outcomes.doneCount;
  control.progress.failed = outcomes.failedCount;
  const minimum = minGroupSize(settings.algorithm, settings.samplesPerScenario);
  const blockedReason = (): string | null => {
    const share = control.inForce().maxFailedShare;
    if (outcomes.tooManyFailed(share)) return outcomes.blockedReason(share);
    if (outcomes.survivors(minimum).kept.length > 0) return null;
    return `step ${step}: no rollout survived to train on (${outcomes.failedCount} failed; first error: ${outcomes.firstError ?? 'none'})`;
  };
  const position = new Map(planned.map((p, i) => [p.rolloutId, i]));
  let attempt = resumed?.attempt ?? 0;
  let batch = resumed ? resumed.pending.map((i) => planned[i]!) : planned;
  for (;;) {
    const left = await runAttempt(input, outcomes, batch, attempt, true);
    if (left.length > 0) {
      const pending = left.map((p) => position.get(p.rolloutId)!);
      const suspended = { attempt, pending, outcomes: outcomes.snapshot() };
      if (utf8Length(JSON.stringify(suspended)) <= CARRIED_STEP_BYTES) return { suspended };
      // Too much to carry in one payload: the step finishes in this history (sized for it), then continues.
      await runAttempt(input, outcomes, left, attempt, false);
    }
    const reason = blockedReason();
    if (reason === null) return outcomes;
    if (!(await control.resumedByOperator(reason))) return null;
    attempt++;
    batch = outcomes.failedRollouts();
  }
}

/**
 * One attempt at `batch`; returns the dialogues it left unstarted because the server suggested
 * continuing as new (never when not `suspendable`; empty when it ran them all). At least one
 * dialogue starts in every run of the workflow, so a run that continues as new always makes progress.
 */
async function runAttempt(
  { settings, state, control, step, rolloutSettings }: StepRolloutsInput,
  outcomes: StepRolloutOutcomes,
  batch: PlannedRollout[],
  attempt: number,
  suspendable: boolean,
): Promise<PlannedRollout[]> {
  const progress = control.progress;
  let started = 0;
  // A stop request lets the step finish in this run, as it would without continue-as-new.
  const suspending = () => suspendable && started > 0 && !state.stopRequested && workflowInfo().continueAsNewSuggested;
  const results = await boundedFanOut(batch, control.inForce().maxInFlight, async (p) => {
    // Pause: in-flight dialogues finish; no new one starts until resumed.
    if (state.paused) await control.pauseLifted();
    if (suspending()) return null;
    started++;
    return counted(progress, () => {
      const { rolloutId, seed } = rolloutAttempt(p, attempt);
      // The dialogue's level (training.difficultyMix) reaches its simulator calls with its settings.
      const dialogueSettings = plannedRolloutSettings(rolloutSettings, p);
      return executeChild(rollout, {
        ...rolloutStartOptions(dialogueSettings),
        workflowId: rolloutId,
        taskQueue: workflowInfo().taskQueue,
        args: [
          {
            rolloutId,
            scenarioRef: { dir: settings.scenarioDir, id: p.scenarioId },
            settings: dialogueSettings,
            seed,
            runName: settings.runName,
            step,
          },
        ],
      });
    });
  });
  const notStarted: PlannedRollout[] = [];
  results.forEach((result, i) => {
    const p = batch[i]!;
    if (!result.ok) outcomes.failed(p.rolloutId, failureMessage(result.error));
    else if (result.value === null) notStarted.push(p);
    else outcomes.succeeded(p.rolloutId, result.value);
  });
  progress.done = outcomes.doneCount;
  progress.failed = outcomes.failedCount;
  return notStarted;
}
