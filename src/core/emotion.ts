/** Emotion bounds and the SAGE state thresholds (S >= 100, A >= 70, B >= 40, C >= 10, F < 10). */
export const EMOTION_MIN = 0;
export const EMOTION_MAX = 100;
export const CHANGE_MIN = -10;
export const CHANGE_MAX = 10;
export const SAGE_INITIAL_EMOTION = 40;
export const RLVER_TRAINING_INITIAL_EMOTION = 30;

export type EmotionState = 'S' | 'A' | 'B' | 'C' | 'F';

export function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/** The simulator's change is an integer in [-10, 10]; anything else is rounded and clamped. */
export function clampChange(change: number): number {
  return clamp(Math.round(change), CHANGE_MIN, CHANGE_MAX);
}

export function emotionAfterTurn(emotion: number, change: number): number {
  return clamp(emotion + clampChange(change), EMOTION_MIN, EMOTION_MAX);
}

export function emotionState(emotion: number): EmotionState {
  if (emotion >= 100) return 'S';
  if (emotion >= 70) return 'A';
  if (emotion >= 40) return 'B';
  if (emotion >= 10) return 'C';
  return 'F';
}

/** In S and F the simulated user ends the conversation. */
export function stateEndsDialogue(state: EmotionState): boolean {
  return state === 'S' || state === 'F';
}
