import { trainingStatusQuery, type TrainingResult, type TrainingStatus } from '../workflows/training.js';
import type { TrainingHandle } from './trainingRuns.js';

export interface FollowedTraining {
  /** The run's status every poll interval; ends when the run ends. A status query that fails is skipped. */
  statuses: AsyncIterable<TrainingStatus>;
  /** The run's result: it follows continue-as-new to the final execution. */
  result: Promise<TrainingResult>;
}

function pause(ms: number): { done: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/** Follows a run until it ends; what to show of each status is the caller's choice. */
export function followTraining(handle: TrainingHandle, pollMs: number): FollowedTraining {
  const result = handle.result();
  const ended = result.then(
    () => 'ended' as const,
    () => 'ended' as const,
  );
  async function* statuses(): AsyncGenerator<TrainingStatus> {
    for (;;) {
      const wait = pause(pollMs);
      const woke = await Promise.race([ended, wait.done]);
      wait.cancel();
      if (woke === 'ended') return;
      const status = await Promise.race([handle.query(trainingStatusQuery).catch(() => null), ended]);
      if (status === 'ended') return;
      if (status) yield status;
    }
  }
  return { statuses: statuses(), result };
}
