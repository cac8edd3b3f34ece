import { z } from 'zod';
import { CHANGE_MAX, CHANGE_MIN, clampChange } from './emotion.js';

/** The simulator's per-turn analysis (SAGE's first call). */
export const analysisSchema = z.object({
  assistantIntent: z.string(),
  goalFit: z.string(),
  innerThoughts: z.string(),
  emotionChange: z.number().int().min(CHANGE_MIN).max(CHANGE_MAX),
});
export type Analysis = z.infer<typeof analysisSchema>;

/**
 * JSON schema sent as `response_format`; it bounds the change so constrained decoders cannot leave
 * [-10, 10]. `maxChars` bounds the text fields, so a small local model cannot ramble past its
 * token limit and leave the JSON unfinished.
 */
export function analysisJsonSchema(maxChars?: number): Record<string, unknown> {
  if (maxChars === undefined) return ANALYSIS_JSON_SCHEMA;
  const text = (description: string) => ({ type: 'string', description, maxLength: maxChars });
  return {
    ...ANALYSIS_JSON_SCHEMA,
    properties: {
      assistantIntent: text(ANALYSIS_JSON_SCHEMA.properties.assistantIntent.description),
      goalFit: text(ANALYSIS_JSON_SCHEMA.properties.goalFit.description),
      innerThoughts: text(ANALYSIS_JSON_SCHEMA.properties.innerThoughts.description),
      emotionChange: ANALYSIS_JSON_SCHEMA.properties.emotionChange,
    },
  };
}

export const ANALYSIS_JSON_SCHEMA = {
  type: 'object',
  properties: {
    assistantIntent: { type: 'string', description: 'What the assistant meant by its last reply' },
    goalFit: { type: 'string', description: "How well the reply served the user's goal and hidden intention" },
    innerThoughts: { type: 'string', description: "The user's private thoughts, in the first person" },
    emotionChange: { type: 'integer', minimum: CHANGE_MIN, maximum: CHANGE_MAX },
  },
  required: ['assistantIntent', 'goalFit', 'innerThoughts', 'emotionChange'],
  additionalProperties: false,
} as const;

const KEY_ALIASES: Record<keyof Analysis, string[]> = {
  assistantIntent: [
    'assistantintent',
    'assistant_intent',
    'intent',
    'assistantmeaning',
    'meaning',
    '助手意图',
    '对方意图',
    '意图',
  ],
  goalFit: ['goalfit', 'goal_fit', 'fit', 'goalalignment', '目标契合', '契合度', '是否契合'],
  innerThoughts: ['innerthoughts', 'inner_thoughts', 'thoughts', 'innerthought', '内心想法', '内心独白', '想法'],
  emotionChange: ['emotionchange', 'emotion_change', 'change', 'delta', 'emotiondelta', '情绪变化', '情绪变化值'],
};

function canonicalKey(key: string): keyof Analysis | null {
  const folded = key.toLowerCase().replace(/[\s*_#:：-]/g, '');
  for (const [canonical, aliases] of Object.entries(KEY_ALIASES) as [keyof Analysis, string[]][]) {
    if (aliases.some((alias) => alias.replace(/[\s_-]/g, '') === folded)) return canonical;
  }
  return null;
}

function parseChange(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return clampChange(value);
  if (typeof value === 'string') {
    const match = /[+-]?\d+(?:\.\d+)?/.exec(value.replace(/[−–]/g, '-'));
    if (match) return clampChange(Number(match[0]));
  }
  return null;
}

function fromFields(fields: Record<string, unknown>): Analysis | null {
  const out: Partial<Record<keyof Analysis, unknown>> = {};
  for (const [key, value] of Object.entries(fields)) {
    const canonical = canonicalKey(key);
    if (canonical && out[canonical] === undefined) out[canonical] = value;
  }
  const change = parseChange(out.emotionChange);
  if (change === null) return null;
  const str = (v: unknown) => (typeof v === 'string' ? v.trim() : v === undefined ? '' : JSON.stringify(v));
  return {
    assistantIntent: str(out.assistantIntent),
    goalFit: str(out.goalFit),
    innerThoughts: str(out.innerThoughts),
    emotionChange: change,
  };
}

function jsonCandidates(raw: string): string[] {
  const candidates: string[] = [];
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(raw);
  if (fenced?.[1]) candidates.push(fenced[1]);
  const first = raw.indexOf('{');
  const last = raw.lastIndexOf('}');
  if (first >= 0 && last > first) candidates.push(raw.slice(first, last + 1));
  return candidates;
}

function fromJson(raw: string): Analysis | null {
  for (const candidate of jsonCandidates(raw)) {
    try {
      const value: unknown = JSON.parse(candidate);
      if (value && typeof value === 'object' && !Array.isArray(value)) {
        const parsed = fromFields(value as Record<string, unknown>);
        if (parsed) return parsed;
      }
    } catch {
      // not JSON; try the next candidate
    }
  }
  return null;
}

function fromLabelledSections(raw: string): Analysis | null {
  const sections: Record<string, string> = {};
  let current: string | null = null;
  for (const line of raw.split(/\r?\n/)) {
    const labelled = /^\s*[-*#>\s]*\**([A-Za-z_ \u4e00-\u9fff]{2,30}?)\**\s*[:：]\s*(.*)$/.exec(line);
    if (labelled?.[1] && canonicalKey(labelled[1])) {
      current = labelled[1];
      sections[current] = (labelled[2] ?? '').trim();
    } else if (current && line.trim().length > 0) {
      sections[current] = `${sections[current] ?? ''}\n${line.trim()}`.trim();
    }
  }
  return fromFields(sections);
}

/**
 * Parses the analysis from structured output, from plain JSON a server returned without honouring
 * `response_format`, or from labelled sections ("Emotion change: +3"). Returns null when nothing
 * trustworthy is there: a dialogue is never scored from a guess.
 *
 * Labelled sections come first: JSON inside them is text the user quotes (a policy under training
 * may write an analysis into its reply), whereas a JSON answer has no labelled lines, since a
 * JSON string cannot hold a line break and its keys are quoted.
 */
export function parseAnalysis(raw: string): Analysis | null {
  return fromLabelledSections(raw) ?? fromJson(raw);
}

/** The emotion change a reply's fields hold, as written, or undefined when no field names it. */
function writtenChange(fields: Record<string, unknown>): unknown {
  for (const [key, value] of Object.entries(fields)) if (canonicalKey(key) === 'emotionChange') return value;
  return undefined;
}

/**
 * Why `parseAnalysis` found nothing in a reply, naming the field: for the error an operator reads
 * when the simulator's answers cannot be scored.
 */
export function analysisProblem(raw: string): string {
  for (const candidate of jsonCandidates(raw)) {
    let value: unknown;
    try {
      value = JSON.parse(candidate);
    } catch {
      continue;
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) continue;
    const change = writtenChange(value as Record<string, unknown>);
    if (change === undefined) return 'emotionChange: missing from the JSON object';
    return `emotionChange: ${JSON.stringify(change)?.slice(0, 80) ?? String(change)} is not a number`;
  }
  const labelled = /^\s*[-*#>\s]*\**([A-Za-z_ \u4e00-\u9fff]{2,30}?)\**\s*[:：]\s*(.*)$/gm;
  for (const match of raw.matchAll(labelled))
    if (match[1] && canonicalKey(match[1]) === 'emotionChange')
      return `emotionChange: ${JSON.stringify((match[2] ?? '').trim().slice(0, 80))} is not a number`;
  return 'emotionChange: missing (neither a JSON object nor a labelled "Emotion change:" line)';
}
