import type { StepTake, TakenGroup } from '../core/training/dialogueStreamState.js';
import type { StepToApply } from '../core/training/optimizedStep.js';
import type { PlannedRollout } from '../core/training/stepPlan.js';
import { StepRolloutOutcomes } from '../core/training/stepRollouts.js';
import type { CarriedStream } from '../core/training/trainingState.js';
import { survivorsOf, type StepContext } from './trainingStep.js';

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
