/** Which rule found the final answer, from the most explicit to the last resort. */
export type AnswerRule = 'marker' | 'boxed' | 'phrase' | 'last-number';

export interface ExtractedAnswer {
  /** The number, normalised (see normaliseNumber). */
  value: string;
  rule: AnswerRule;
}

/**
 * A number as written in an answer: an optional sign and currency, digits with or without thousands
 * separators, an optional decimal part. Commas only as groups of three, so "3,4" is two numbers.
 */
const NUMBER = /[-−]?[$€£]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-−]?\.\d+/g;

/** The canonical form of a written number ("$1,234.50" → "1234.5", "18.00" → "18"); null when it is not one. */
export function normaliseNumber(text: string): string | null {
  const cleaned = text.replace(/[\s$€£,]/g, '').replace('−', '-');
  if (!/^-?(?:\d+(?:\.\d*)?|\.\d+)$/.test(cleaned)) return null;
  const value = Number(cleaned);
  if (!Number.isFinite(value)) return null;
  // "-0" and "0" are one answer.
  return String(value === 0 ? 0 : value);
}

function numbersIn(text: string): string[] {
  return [...text.matchAll(NUMBER)].flatMap((m) => normaliseNumber(m[0]) ?? []);
}

/** The first number after the last match of `pattern` (whose group 1 is the text after the cue). */
function afterLastCue(text: string, pattern: RegExp): string | null {
  const matches = [...text.matchAll(pattern)];
  for (const match of matches.reverse()) {
    const first = numbersIn(match[1] ?? '')[0];
    if (first !== undefined) return first;
  }
  return null;
}

const CUES: [AnswerRule, RegExp][] = [
  // GSM8K's own form, which the prompt asks for.
  ['marker', /####\s*([^\n]*)/g],
  ['boxed', /\\boxed\s*\{([^{}]*)\}/g],
  ['phrase', /(?:final answer|the answer|answer)\s*(?:is|:|=)\s*:?\s*([^\n]*)/gi],
];

/**
 * The final answer of a worked solution: after the last `####`, else in the last `\boxed{}`, else
 * after the last "answer is" / "answer:", else the last number of the text. Null when the text has
 * no number at all.
 */
export function extractFinalAnswer(text: string): ExtractedAnswer | null {
  for (const [rule, pattern] of CUES) {
    const value = afterLastCue(text, pattern);
    if (value !== null) return { value, rule };
  }
  const numbers = numbersIn(text);
  const last = numbers[numbers.length - 1];
  return last === undefined ? null : { value: last, rule: 'last-number' };
}

export interface MathVerdict {
  solved: boolean;
  outcome: 'correct' | 'wrong' | 'no-answer';
  extracted: ExtractedAnswer | null;
}

/** Exact match of the final answer with the expected one, both as normalised numbers. */
export function scoreMathAnswer(reply: string, expected: string): MathVerdict {
  const extracted = extractFinalAnswer(reply);
  if (extracted === null) return { solved: false, outcome: 'no-answer', extracted };
  const solved = extracted.value === (normaliseNumber(expected) ?? expected.trim());
  return { solved, outcome: solved ? 'correct' : 'wrong', extracted };
}
