import { executeChild, workflowInfo } from '@temporalio/workflow';
import type { RolloutSettings } from '../core/rolloutSettingsSchema.js';
import { rolloutStartOptions } from '../core/rolloutStart.js';
import { rolloutAttempt, type PlannedRollout } from '../core/training/stepPlan.js';
import { minGroupSize, StepRolloutOutcomes } from '../core/training/stepRollouts.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import type { TrainingState } from '../core/training/trainingState.js';
import { boundedFanOut, failureMessage } from './fanOut.js';
import { rollout } from './rollout.js';
import type { TrainingControl } from './trainingControl.js';

export interface StepRolloutsInput {
  settings: TrainingSettings;
  state: TrainingState;
  control: TrainingControl;
  step: number;
  planned: PlannedRollout[];
  rolloutSettings: RolloutSettings;
}

/**
 * Runs a step's dialogues as child workflows, at most `maxInFlight` at once. When more than
 * `maxFailedShare` fail, or too few survive to train on, the run waits for an operator (fix the
 * endpoint, then `attune resume` retries the failed ones, as new attempts). Null when the operator
 * stopped the run instead.
 */
export async function runStepRollouts(input: StepRolloutsInput): Promise<StepRolloutOutcomes | null> {
  const { control, planned, settings, step } = input;
  const outcomes = new StepRolloutOutcomes(planned);
  control.progress.total = planned.length;
  const minimum = minGroupSize(settings.algorithm, settings.samplesPerScenario);
  const blockedReason = (): string | null => {
    const share = control.inForce().maxFailedShare;
    if (outcomes.tooManyFailed(share)) return outcomes.blockedReason(share);
    if (outcomes.survivors(minimum).kept.length > 0) return null;
    return `step ${step}: no rollout survived to train on (${outcomes.failedCount} failed; first error: ${outcomes.firstError ?? 'none'})`;
  };
  await runAttempt(input, outcomes, planned, 0);
  for (let attempt = 1, reason = blockedReason(); reason !== null; attempt++, reason = blockedReason()) {
    if (!(await control.resumedByOperator(reason))) return null;
    await runAttempt(input, outcomes, outcomes.failedRollouts(), attempt);
  }
  return outcomes;
}

async function runAttempt(
  { settings, state, control, step, rolloutSettings }: StepRolloutsInput,
  outcomes: StepRolloutOutcomes,
  batch: PlannedRollout[],
  attempt: number,
): Promise<void> {
  const progress = control.progress;
  const results = await boundedFanOut(batch, control.inForce().maxInFlight, async (p) => {
    // Pause: in-flight dialogues finish; no new one starts until resumed.
    if (state.paused) await control.pauseLifted();
    progress.inFlight++;
    try {
      const { rolloutId, seed } = rolloutAttempt(p, attempt);
      const summary = await executeChild(rollout, {
        ...rolloutStartOptions(rolloutSettings),
        workflowId: rolloutId,
        taskQueue: workflowInfo().taskQueue,
        args: [
          {
            rolloutId,
            scenarioRef: { dir: settings.scenarioDir, id: p.scenarioId },
            settings: rolloutSettings,
            seed,
            runName: settings.runName,
            step,
          },
        ],
      });
      progress.done++;
      return summary;
    } catch (error) {
      progress.failed++;
      throw error;
    } finally {
      progress.inFlight--;
    }
  });
  results.forEach((result, i) => {
    const p = batch[i]!;
    if (result.ok) outcomes.succeeded(p.rolloutId, result.value);
    else outcomes.failed(p.rolloutId, failureMessage(result.error));
  });
  progress.done = outcomes.doneCount;
  progress.failed = outcomes.failedCount;
}
