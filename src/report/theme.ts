import type { EmotionState } from '../core/emotion.js';
import { emotionState } from '../core/emotion.js';

/** Emotion-state colours: S violet, A green, B amber, C orange, F red; tints for chart bands and chips. */
export const STATE_COLORS: Record<EmotionState, { fg: string; tint: string; label: string }> = {
  S: { fg: '#7c3aed', tint: '#f1eafe', label: 'S · 100' },
  A: { fg: '#15803d', tint: '#e8f6ec', label: 'A · 70–99' },
  B: { fg: '#b7791f', tint: '#fdf6e3', label: 'B · 40–69' },
  C: { fg: '#e0641b', tint: '#fdeee4', label: 'C · 10–39' },
  F: { fg: '#d12f3f', tint: '#fce9eb', label: 'F · 0–9' },
};

export const STATES: readonly EmotionState[] = ['S', 'A', 'B', 'C', 'F'];

export function stateColor(emotion: number): string {
  return STATE_COLORS[emotionState(emotion)].fg;
}

/** Series colours for the run charts (distinct from the state colours where they share a chart). */
export const SERIES = {
  ink: '#1f2937',
  blue: '#2563eb',
  teal: '#0d9488',
  violet: '#7c3aed',
  red: '#d12f3f',
  orange: '#e0641b',
  grey: '#6b7280',
  pink: '#db2777',
} as const;
