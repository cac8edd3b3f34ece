/**
 * A simulated user whose emotion follows a rule instead of a model: deterministic and instant, and
 * its reward is a property a small policy can learn in a few steps. It is for tests and benchmarks
 * that must show the whole loop learns; it is not a judge of empathy.
 *
 * The rule rewards brevity: a reply of `targetChars` characters leaves the emotion as it is, every
 * `charsPerPoint` characters shorter raises it by one, longer lowers it, within SAGE's [-10, 10].
 * A reply with nothing visible in it is not a short reply: it scores the rule's worst, -10 (a
 * policy found the empty reply as a hack when it earned +10).
 */
export interface RuleBasedUserSettings {
  targetChars: number;
  charsPerPoint: number;
}

export const DEFAULT_RULE: RuleBasedUserSettings = { targetChars: 64, charsPerPoint: 3 };

export function ruleBasedEmotionChange(reply: string, rule: RuleBasedUserSettings = DEFAULT_RULE): number {
  if (reply.trim() === '') return -10;
  const points = Math.round((rule.targetChars - [...reply].length) / rule.charsPerPoint);
  // (+ 0 writes -0 as 0.)
  return Math.max(-10, Math.min(10, points)) + 0;
}

/** What the rule-based user says next: plain, the same for a given turn. */
export function ruleBasedUserMessage(turn: number): string {
  return `Thanks. (turn ${turn}) Keep it short, please.`;
}

export const RULE_BASED_OPENING = 'I had a rough day and I do not want a lecture.';

/**
 * The assistant's latest reply in an analysis prompt: SAGE's prompts end with it as one JSON string
 * literal on the last line (see prompts/quoting.ts). Null when the prompt does not end that way.
 */
export function latestReplyOf(analysisPrompt: string): string | null {
  const line = analysisPrompt.slice(analysisPrompt.lastIndexOf('\n') + 1);
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'string' ? value : null;
  } catch {
    return null;
  }
}
