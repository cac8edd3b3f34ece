/**
 * A rule-based user whose turns are rewarded differently, so that final-only credit blurs which
 * turn earned what: before the user feels heard (turns up to `heardAfterTurn`) a short reply pays
 * and a long one costs (the brevity rule of ruleBasedUser.ts, standing for "acknowledge first, no
 * advice yet"); once heard, length is neutral. The final emotion mixes both: only the early turns
 * move it, but final-only credit spreads it over every turn.
 */
import { DEFAULT_RULE, ruleBasedEmotionChange, type RuleBasedUserSettings } from './ruleBasedUser.js';

export interface TurnDifferentiatedSettings extends RuleBasedUserSettings {
  /** The last turn before the user feels heard (1-based). */
  heardAfterTurn: number;
}

export const DEFAULT_TURN_DIFFERENTIATED_RULE: TurnDifferentiatedSettings = { ...DEFAULT_RULE, heardAfterTurn: 1 };

export function turnDifferentiatedEmotionChange(
  reply: string,
  turn: number,
  rule: TurnDifferentiatedSettings = DEFAULT_TURN_DIFFERENTIATED_RULE,
): number {
  // Nothing visible stays the worst in every turn, so the empty reply is no hack later on either.
  if (reply.trim() === '') return -10;
  return turn <= rule.heardAfterTurn ? ruleBasedEmotionChange(reply, rule) : 0;
}

/**
 * The same user whose later turns reward the opposite: once heard (after `heardAfterTurn`), a longer
 * reply pays and a shorter one costs, as much as brevity paid before (the brevity rule's score, negated).
 * Final-only credit then sums opposite signals over one dialogue's turns: a reply that earned turn 1 its
 * best costs turn 2 its best, and the dialogue's one reward cannot say which.
 */
export function turnOpposedEmotionChange(
  reply: string,
  turn: number,
  rule: TurnDifferentiatedSettings = DEFAULT_TURN_DIFFERENTIATED_RULE,
): number {
  if (reply.trim() === '') return -10;
  const brevity = ruleBasedEmotionChange(reply, rule);
  // (+ 0 writes -0 as 0.)
  return (turn <= rule.heardAfterTurn ? brevity : -brevity) + 0;
}

/**
 * The turn an analysis prompt scores: the assistant's earlier replies in its dialogue block (one
 * line each, see prompts/profile.ts) plus the latest one.
 */
export function turnOfAnalysis(analysisPrompt: string): number {
  return analysisPrompt.split('\n').filter((line) => /^(Assistant|AI助手): "/.test(line)).length + 1;
}
