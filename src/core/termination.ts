import { emotionState } from './emotion.js';

export type Outcome = 'success' | 'failure' | 'goodbye' | 'turn-limit' | 'malformed';
export const OUTCOMES: readonly Outcome[] = ['success', 'failure', 'goodbye', 'turn-limit', 'malformed'];

/** Decides, after the simulator's analysis of assistant turn `turn` (1-based), whether the dialogue ends. */
export function outcomeAfterAnalysis(emotion: number, turn: number, maxTurns: number): Outcome | null {
  const state = emotionState(emotion);
  if (state === 'S') return 'success';
  if (state === 'F') return 'failure';
  if (turn >= maxTurns) return 'turn-limit';
  return null;
}

const GOODBYE_EN =
  /\b(good\s?bye|bye(?:\s?bye)?|farewell|see (?:you|ya)(?: later| around)?|take care|talk (?:to you )?later|gotta go|i(?:'m| am) (?:going to )?(?:leave|log off|head out)|i(?:'m| am) done (?:here|talking))\b/i;
const GOODBYE_ZH = /(再见|拜拜|回头聊|下次聊|先这样吧|不聊了|我先走了|告辞|晚安)/;

/** True when a simulated user's message takes leave of the conversation, in English or Chinese. */
export function isGoodbye(message: string, language: 'en' | 'zh'): boolean {
  // Both patterns are checked: bilingual users switch language, and a Chinese profile may answer in English.
  return language === 'zh'
    ? GOODBYE_ZH.test(message) || GOODBYE_EN.test(message)
    : GOODBYE_EN.test(message) || GOODBYE_ZH.test(message);
}

/** Reward = final emotion / 100; a malformed policy output scores 0. */
export function rewardFor(outcome: Outcome, finalEmotion: number): number {
  if (outcome === 'malformed') return 0;
  return Math.min(1, Math.max(0, finalEmotion / 100));
}
