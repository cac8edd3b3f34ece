import type { StepTake, TakenGroup } from '../core/training/dialogueStreamState.js';
import type { OptimizedStep, StepToApply } from '../core/training/optimizedStep.js';
import type { PlannedRollout } from '../core/training/stepPlan.js';
import { StepRolloutOutcomes } from '../core/training/stepRollouts.js';
import type { CarriedStream } from '../core/training/trainingState.js';
import { utf8Length } from '../core/transcriptParts.js';
import { CARRIED_STEP_BYTES } from './trainingRollouts.js';
import { finishStep, survivorsOf, type StepContext } from './trainingStep.js';

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
  }
}

/**
 * Whether an optimized step fits the state the workflow carries to its next run: the step's dialogues'
 * summaries, with room for the trainer's answer. One too large is published in the run that optimized it.
 */
export function fitsCarried(step: StepToApply): boolean {
  return utf8Length(JSON.stringify(step)) <= CARRIED_STEP_BYTES / 2;
}

/** A first-finished step's taken dialogues as the optimizer gets them, each with the version its turns sampled. */
export function takenStepToApply(
  ctx: StepContext,
  { results, versionNames }: CarriedStream,
  taken: { step: number; take: StepTake; groups: TakenGroup[]; startedAt: number },
): StepToApply {
  const { step, take, groups, startedAt } = taken;
  const planned: PlannedRollout[] = [];
  const versionOf = new Map<string, number>();
  for (const g of groups)
    g.rolloutIds.forEach((id, i) => {
      planned.push({ rolloutId: id, scenarioId: g.scenarioId, group: g.group, seed: 0 });
      versionOf.set(id, g.versions[i]!);
    });
  const outcomes = StepRolloutOutcomes.restored(planned, {
    results: planned.map((p, i) => [i, results[p.rolloutId] ?? null]),
    errors: [],
  });
  const survivors = survivorsOf(ctx, step, outcomes);
  const kept = survivors.decision.kept.map((r) => versionOf.get(r.rolloutId)!);
  const oldest = Math.min(...kept);
  return {
    step,
    startedAt,
    policyVersion: versionNames[oldest] ?? String(oldest),
    sampledFrom: oldest,
    survivors: {
      ...survivors,
      optimizerRollouts: survivors.optimizerRollouts.map((r, i) => ({ ...r, policyVersion: kept[i]! })),
    },
    take,
  };
}
