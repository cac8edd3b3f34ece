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

/**
 * The rule-based user's best reward: every rewarded turn raises the emotion by its maximum, 10
 * (every turn for the brevity rule; the turn-differentiated rule scores only the turns before the
 * user feels heard).
 */
export function ruleTaskCeiling(initialEmotion: number, turns: number, rewardedTurns = turns): number {
  return Math.min(100, initialEmotion + 10 * Math.min(turns, rewardedTurns)) / 100;
}
