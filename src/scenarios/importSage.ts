import { z } from 'zod';
import { describeIssues, scenarioSchema, type Personality, type Scenario } from '../core/scenario.js';

/** Checked here, not only as the scenario's fields, so a rejection names the SAGE field. */
const nonEmptyText = z.string().trim().min(1, 'must not be empty');

/** One line of the public SAGE / RLVER profile files. Extra fields are kept in `source.record`. */
const sageRecordSchema = z
  .object({
    id: z.union([z.string().min(1), z.number()]),
    player: nonEmptyText,
    scene: nonEmptyText,
    main_cha: z.union([z.string(), z.array(z.string())]).optional(),
    cha_group: z.union([z.string(), z.array(z.string())]).optional(),
    task: nonEmptyText,
    first_talk: z.string().optional(),
  })
  .passthrough();

export interface ImportProblem {
  line: number;
  message: string;
}

export interface ImportResult {
  scenarios: { scenario: Scenario; line: number }[];
  problems: ImportProblem[];
}

const PERSONALITY_WORDS: [Personality, RegExp][] = [
  ['negative', /负面|消极|悲观|negative/i],
  ['passive', /被动|passive/i],
  ['avoidant', /回避|逃避|avoidant/i],
];

function personalityOf(group: string): Personality {
  for (const [personality, pattern] of PERSONALITY_WORDS) if (pattern.test(group)) return personality;
  return 'other';
}

function asText(value: string | string[] | undefined): string {
  if (value === undefined) return '';
  return Array.isArray(value) ? value.join('、') : value;
}

function hasCjk(text: string): boolean {
  return /[\u3400-\u9fff]/.test(text);
}

function idFor(prefix: string, raw: string | number): string {
  const cleaned = String(raw)
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return `${prefix}-${cleaned || 'x'}`;
}

/**
 * SAGE profiles: `player` is the persona paragraph, `scene` the background, `task` the conversation
 * goal (the hidden intention is woven into it), `main_cha` and `cha_group` the character traits and
 * personality group. The original record is kept verbatim, so nothing is lost.
 */
export function importSageJsonl(text: string, options: { prefix?: string; file?: string } = {}): ImportResult {
  const prefix = options.prefix ?? 'sage';
  const scenarios: ImportResult['scenarios'] = [];
  const problems: ImportProblem[] = [];
  const seen = new Map<string, { line: number; raw: string }>();
  // A byte-order mark (files saved by some Windows editors) is not part of line 1's JSON.
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((rawLine, index) => {
    const line = index + 1;
    if (rawLine.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(rawLine);
    } catch (error) {
      problems.push({ line, message: `not valid JSON (${(error as Error).message})` });
      return;
    }
    const record = sageRecordSchema.safeParse(value);
    if (!record.success) {
      problems.push({ line, message: describeIssues(record.error).join('; ') });
      return;
    }
    const r = record.data;
    const id = idFor(prefix, r.id);
    const earlier = seen.get(id);
    if (earlier) {
      problems.push({
        line,
        message:
          earlier.raw === String(r.id)
            ? `duplicate id ${JSON.stringify(r.id)} (also on line ${earlier.line})`
            : `id ${JSON.stringify(r.id)} becomes scenario id "${id}", as does id ${JSON.stringify(earlier.raw)} on line ${earlier.line}: one would overwrite the other's file`,
      });
      return;
    }
    const traits = asText(r.main_cha)
      .split(/[、,，;；\s]+/)
      .map((t) => t.trim())
      .filter(Boolean);
    const group = asText(r.cha_group);
    const candidate = {
      id,
      language: hasCjk(`${r.player}${r.scene}${r.task}`) ? 'zh' : 'en',
      persona: { description: r.player },
      background: r.scene,
      goal: r.task,
      hiddenIntention: r.task,
      personality: personalityOf(group),
      traits,
      goalType: 'other',
      ...(r.first_talk && r.first_talk.trim() !== '' ? { firstMessage: r.first_talk } : {}),
      source: {
        format: 'sage',
        ...(options.file ? { file: options.file } : {}),
        line,
        record: value as Record<string, unknown>,
      },
    };
    const parsed = scenarioSchema.safeParse(candidate);
    if (!parsed.success) {
      problems.push({ line, message: describeIssues(parsed.error).join('; ') });
      return;
    }
    seen.set(id, { line, raw: String(r.id) });
    scenarios.push({ scenario: parsed.data, line });
  });
  return { scenarios, problems };
}
