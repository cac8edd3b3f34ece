import type { OptimizedStep, StepToApply } from '../core/training/optimizedStep.js';
import { utf8Length } from '../core/transcriptParts.js';
import { CARRIED_STEP_BYTES } from './trainingRollouts.js';
import { finishStep, type StepContext } from './trainingStep.js';

/**
 * Runs of the training workflow that ask this patch first (`publishesWhileOptimizing` runs, from the
 * change on) leave a step's publish to the next run; one recorded before it publishes in its own run.
 */
export const PUBLISH_WHILE_OPTIMIZING_PATCH = 'publish-while-optimizing';

/**
 * The publish, evaluation and record of the step the previous run of the training workflow optimized
 * (`OptimizedStep`), run beside this run's own work; `done` resolves false (and `stopped` turns true)
 * when the operator stopped the run while it waited. Without such a step, done at once.
 */
export class StepFinishing {
  stopped = false;
  readonly done: Promise<boolean>;

  constructor(ctx: StepContext, optimized: OptimizedStep | null) {
    this.done = optimized
      ? finishStep(ctx, optimized).then((finished) => {
          this.stopped = !finished;
          return finished;
        })
      : Promise.resolve(true);
    // Its failure surfaces where the run awaits it (before the next step's record), not as unhandled meanwhile.
    this.done.catch(() => undefined);
    if (!optimized) return;
    // Status names the step while its publish and record run (no commands: replays as before).
    const { control } = ctx;
    control.finishing = { step: optimized.step, version: optimized.applied.version };
    const over = () => {
      control.finishing = null;
    };
    this.done.then(over, over);
  }
}

/**
 * Whether an optimized step fits the state the workflow carries to its next run: the step's dialogues'
 * summaries, with room for the trainer's answer. One too large is published in the run that optimized it.
 */
export function fitsCarried(step: StepToApply): boolean {
  return utf8Length(JSON.stringify(step)) <= CARRIED_STEP_BYTES / 2;
}
