import { proxyActivities } from '@temporalio/workflow';
import type { RolloutQueueActivities } from '../activities/index.js';
import { trackedParams } from '../core/tracking/trackedValues.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import type { TrainingState } from '../core/training/trainingState.js';
import { failureMessage } from './fanOut.js';
import type { TrainingControl } from './trainingControl.js';

/**
 * Logs the recorded step to the run's experiment trackers. The activity does not fail for a tracker
 * that is down (it keeps the step pending for a later call); should it fail anyway, training goes on
 * and status says so. Runs without trackers schedule nothing, as before trackers existed.
 */
export async function trackStep(
  settings: TrainingSettings,
  state: TrainingState,
  control: TrainingControl,
  step: number,
): Promise<void> {
  if (!settings.tracking) return;
  const { trackStep: track } = proxyActivities<RolloutQueueActivities>({
    taskQueue: settings.rollout.artifactsTaskQueue,
    startToCloseTimeout: '10 minutes',
    retry: { initialInterval: '1 second', maximumAttempts: 3 },
  });
  try {
    state.tracking = await track({
      run: settings.runName,
      step,
      final: step >= control.inForce().steps || state.stopRequested,
      params: trackedParams(settings),
      tracking: settings.tracking,
    });
  } catch (error) {
    control.report(`tracking step ${step}: ${failureMessage(error)}`);
  }
}
