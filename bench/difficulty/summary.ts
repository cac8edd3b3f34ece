/**
 * The table of bench/difficulty/levels.sh: the Sentient score per simulator level and seed (each
 * evaluation's own interval), and per level over the three seeds (a percentile bootstrap over
 * scenarios, each scenario with its dialogues of every seed), from `attune eval --json` reports.
 * Writes bench/results/difficulty-smollm2.json (or --out FILE).
 *
 *   node --import tsx bench/difficulty/summary.ts [--out FILE] REPORT.json ...
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { FAILURE_EMOTION, SUCCESS_EMOTION } from '../../src/core/evaluationReport.js';
import { groupIntervals, type ScoredDialogue } from '../../src/core/evaluationStatistics.js';
import { goalTypeSchema, personalitySchema } from '../../src/core/scenario.js';
import { defaultResultsFile } from '../resultsFile.js';

const USAGE = 'node --import tsx bench/difficulty/summary.ts [--out FILE] REPORT.json ...';

const intervalSchema = z.object({ low: z.number(), high: z.number() });
const reportSchema = z.object({
  evalId: z.string(),
  score: z.number(),
  ci: intervalSchema,
  count: z.number().int(),
  failed: z.number().int(),
  manifest: z.object({
    simulator: z.object({ model: z.string(), difficulty: z.enum(['simple', 'normal', 'hard']).optional() }),
    policy: z.object({ model: z.string() }),
    protocol: z.object({ maxTurns: z.number().int(), initialEmotion: z.number() }),
    seeds: z.object({ base: z.number().int() }),
  }),
  results: z.array(
    z.looseObject({
      status: z.string(),
      scenarioId: z.string(),
      goalType: goalTypeSchema.optional(),
      personality: personalitySchema.optional(),
      finalEmotion: z.number().optional(),
    }),
  ),
});
type Report = z.infer<typeof reportSchema>;

const LEVELS = ['simple', 'normal', 'hard'] as const;

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { out: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help || positionals.length === 0) {
    console.log(`Usage: ${USAGE}`);
    process.exit(values.help ? 0 : 2);
  }
  const reports = positionals.map((file) => {
    const parsed = reportSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) throw new Error(`${file}: not an attune eval --json report: ${parsed.error.message}`);
    return parsed.data;
  });
  const levels = LEVELS.map((level) =>
    summariseLevel(
      level,
      reports.filter((r) => levelOf(r) === level),
    ),
  );
  const out = values.out ?? defaultResultsFile('difficulty-smollm2', null);
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        command: 'bash bench/difficulty/levels.sh   # beside npx attune dev, see docs/measured.md',
        measuredAt: new Date().toISOString(),
        levels,
      },
      null,
      2,
    )}\n`,
  );
  console.log('level   seed  score  95 % CI        final emotions');
  for (const level of levels) {
    for (const s of level.seeds)
      console.log(
        `${level.level.padEnd(7)} ${String(s.seed).padStart(4)}  ${s.score.toFixed(2).padStart(5)}  ${s.ci.low}-${s.ci.high}`.padEnd(
          38,
        ) + s.finalEmotions.join(', '),
      );
    console.log(
      `${level.level.padEnd(7)}  all  ${level.pooled.score.toFixed(2).padStart(5)}  ${level.pooled.ci.low}-${level.pooled.ci.high}`,
    );
  }
  console.log(`wrote ${out}`);
}

const levelOf = (report: Report) => report.manifest.simulator.difficulty ?? 'normal';

function summariseLevel(level: (typeof LEVELS)[number], reports: Report[]) {
  const seeds = reports
    .map((r) => ({
      seed: r.manifest.seeds.base,
      evalId: r.evalId,
      score: r.score,
      ci: r.ci,
      dialogues: r.count,
      failed: r.failed,
      finalEmotions: r.results.flatMap((d) => (d.finalEmotion === undefined ? [] : [d.finalEmotion])),
    }))
    .sort((a, b) => a.seed - b.seed);
  // Every seed's dialogues of a scenario as that scenario's repeats: one interval over the three seeds,
  // as an evaluation's report computes it.
  const finished: ScoredDialogue[] = reports.flatMap((r) =>
    r.results.flatMap(({ status, scenarioId, goalType, personality, finalEmotion }) =>
      status === 'ok' && goalType && personality && finalEmotion !== undefined
        ? [{ scenarioId, goalType, personality, finalEmotion }]
        : [],
    ),
  );
  const { score: ci } = groupIntervals(
    finished,
    (emotion) => emotion >= SUCCESS_EMOTION,
    (emotion) => emotion < FAILURE_EMOTION,
  );
  const emotions = seeds.flatMap((s) => s.finalEmotions);
  const score = emotions.length > 0 ? emotions.reduce((a, b) => a + b, 0) / emotions.length : Number.NaN;
  return {
    level,
    seeds,
    pooled: { dialogues: emotions.length, score, ci },
  };
}

main();
