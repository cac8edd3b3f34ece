import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import type { training } from '../../src/workflows/training.js';
import { statusWhen } from './statusWhen.js';
import type { TrainingRig } from './trainingRig.js';

/**
 * Holds the run between steps `step - 1` and `step`: paused once every dialogue of the earlier
 * step has started (a pause lets in-flight dialogues finish and starts no new one), so the caller
 * can break something before `step` begins and then resume.
 */
export async function pausedBefore(
  rig: Pick<TrainingRig, 'client'>,
  handle: WorkflowHandle<typeof training>,
  run: string,
  step: number,
): Promise<void> {
  const before = await statusWhen(
    rig,
    run,
    (s) =>
      s.step >= step ||
      (s.step === step - 1 &&
        (s.phase === 'rollouts'
          ? s.rollouts.total > 0 && s.rollouts.inFlight + s.rollouts.done + s.rollouts.failed === s.rollouts.total
          : s.phase !== 'starting')),
    `every dialogue of step ${step - 1} to start`,
    120_000,
  );
  assert.equal(before.step, step - 1, `the run went past step ${step - 1} before it could be paused`);
  await handle.executeUpdate('pause');
  await statusWhen(rig, run, (s) => s.step === step && s.phase === 'paused', `the pause before step ${step}`, 120_000);
}
