import { valueStats } from '../statistics/valueStats.js';

/** A reply with fewer visible characters than this counts as near-empty. */
export const NEAR_EMPTY_CHARS = 3;
/** Repetition within a reply counts repeated word n-grams of this length. */
const REPEAT_N = 3;
/** Distinct n-grams across the step are counted over word n-grams of this length (distinct-2). */
const DISTINCT_N = 2;

/** What a step's replies look like, for the guardrails: signs of a policy gaming its reward. */
export interface ReplySignals {
  replies: number;
  /** Characters per reply (trimmed): mean and population standard deviation. */
  replyLengthMean: number;
  replyLengthStd: number;
  /** Share of replies with fewer than NEAR_EMPTY_CHARS visible characters. */
  emptyShare: number;
  /** Mean over replies of the share of word trigrams that repeat one earlier in the same reply. */
  repetition: number;
  /** Distinct word bigrams / all word bigrams over the step's replies (0 when there are none). */
  distinctBigrams: number;
}

function words(text: string): string[] {
  return text.toLowerCase().split(/\s+/).filter(Boolean);
}

function ngrams(tokens: readonly string[], n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i + n <= tokens.length; i++) out.push(tokens.slice(i, i + n).join(' '));
  return out;
}

/** Share of a reply's n-grams seen before within it (0 for a reply too short to have any). */
function repeatedShare(tokens: readonly string[]): number {
  const grams = ngrams(tokens, REPEAT_N);
  if (grams.length === 0) return 0;
  return (grams.length - new Set(grams).size) / grams.length;
}

/** The signals of a step's assistant replies (every turn of the dialogues the optimizer got). */
export function replySignals(replies: readonly string[]): ReplySignals {
  const trimmed = replies.map((r) => r.trim());
  const lengths = valueStats(trimmed.map((r) => r.length));
  const tokens = trimmed.map(words);
  const bigrams = tokens.flatMap((t) => ngrams(t, DISTINCT_N));
  const n = Math.max(1, replies.length);
  return {
    replies: replies.length,
    replyLengthMean: lengths.mean,
    replyLengthStd: lengths.std,
    emptyShare: trimmed.filter((r) => r.length < NEAR_EMPTY_CHARS).length / n,
    repetition: tokens.reduce((sum, t) => sum + repeatedShare(t), 0) / n,
    distinctBigrams: bigrams.length === 0 ? 0 : new Set(bigrams).size / bigrams.length,
  };
}
