/** A finished (or dropped) rollout of a training step. */
export interface StepRollout {
  rolloutId: string;
  scenarioId: string;
  /** Group key: the GRPO group (the scenario within this step). */
  group: string;
  ok: boolean;
}

export interface GroupDecision {
  /** Rollouts whose dialogues go to the optimizer. */
  kept: StepRollout[];
  /** Finished rollouts left out because too few of their group survived. */
  dropped: StepRollout[];
  failed: number;
}

/**
 * GRPO needs a baseline: a group keeps its surviving members when at least `minGroupSize`
 * remain (their advantages are normalised over the survivors), and is dropped whole otherwise,
 * because a lone dialogue has no group to compare with. PPO (n = 1) passes minGroupSize = 1.
 */
export function keepGroups(rollouts: StepRollout[], minGroupSize: number): GroupDecision {
  const byGroup = new Map<string, StepRollout[]>();
  for (const r of rollouts) byGroup.set(r.group, [...(byGroup.get(r.group) ?? []), r]);
  const kept: StepRollout[] = [];
  const dropped: StepRollout[] = [];
  for (const members of byGroup.values()) {
    const ok = members.filter((m) => m.ok);
    if (ok.length >= minGroupSize) kept.push(...ok);
    else dropped.push(...ok);
  }
  const order = (a: StepRollout, b: StepRollout) => a.rolloutId.localeCompare(b.rolloutId);
  return { kept: kept.sort(order), dropped: dropped.sort(order), failed: rollouts.filter((r) => !r.ok).length };
}
