/** The learning benchmark's figures of how fast a run's reward rises. */

/**
 * The first step whose mean reward reaches `fraction` of the possible rise: from the first step's
 * reward to `ceiling`, the best reward the task allows. Null when no step does.
 */
export function stepReaching(
  rows: readonly { step: number; reward: { mean: number } }[],
  fraction: number,
  ceiling: number,
): number | null {
  const start = rows[0]?.reward.mean;
  if (start === undefined || ceiling <= start) return null;
  const target = start + fraction * (ceiling - start);
  return rows.find((r) => r.reward.mean >= target)?.step ?? null;
}

/** The rule-based user's best reward: every turn raises the emotion by its maximum, 10. */
export function ruleTaskCeiling(initialEmotion: number, turns: number): number {
  return Math.min(100, initialEmotion + 10 * turns) / 100;
}
