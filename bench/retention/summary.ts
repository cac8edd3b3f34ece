/**
 * The table of bench/retention/run.sh: each capability suite's score (share solved, 95 % Wilson
 * interval) before and after training, from `attune eval --suite ... --json` reports, and the
 * change. Writes bench/results/retention-smollm2.json (or --out FILE).
 *
 *   node --import tsx bench/retention/summary.ts --before STEP --after STEP [--out FILE] REPORT.json ...
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { defaultResultsFile } from '../resultsFile.js';

const USAGE = 'node --import tsx bench/retention/summary.ts --before STEP --after STEP [--out FILE] REPORT.json ...';

const reportSchema = z.object({
  evalId: z.string(),
  suite: z.enum(['math', 'code']),
  score: z.number(),
  ci: z.object({ low: z.number(), high: z.number() }),
  solved: z.number().int(),
  count: z.number().int(),
  failed: z.number().int(),
  environment: z.object({
    dataset: z.object({ name: z.string(), sha256: z.string(), problems: z.number().int() }),
    prompt: z.object({ hash: z.string() }),
    decoding: z.object({ temperature: z.number(), maxTokens: z.number().int() }),
    policy: z.object({ baseURL: z.string(), model: z.string() }),
  }),
  problems: z.array(z.looseObject({ problemId: z.string(), outcome: z.string().optional() })),
});
type Report = z.infer<typeof reportSchema>;

const percent = (x: number) => `${(100 * x).toFixed(1)} %`;

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      before: { type: 'string' },
      after: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help || positionals.length === 0 || !values.before || !values.after) {
    console.log(`Usage: ${USAGE}`);
    process.exit(values.help ? 0 : 2);
  }
  const reports = positionals.map((file) => {
    const parsed = reportSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) throw new Error(`${file}: not an attune eval --suite --json report: ${parsed.error.message}`);
    return parsed.data;
  });
  const stepOf = (r: Report) => r.environment.policy.model.split('@').at(-1);
  const rows = (['math', 'code'] as const).map((suite) => {
    const pick = (step: string) => {
      const r = reports.find((x) => x.suite === suite && stepOf(x) === step);
      if (!r) throw new Error(`no ${suite} report of step ${step} among the reports given`);
      const outcomes: Record<string, number> = {};
      for (const p of r.problems) outcomes[p.outcome ?? 'none'] = (outcomes[p.outcome ?? 'none'] ?? 0) + 1;
      return {
        evalId: r.evalId,
        policy: r.environment.policy.model,
        score: r.score,
        ci: r.ci,
        solved: r.solved,
        count: r.count,
        failed: r.failed,
        outcomes,
      };
    };
    const before = pick(values.before!);
    const after = pick(values.after!);
    const env = reports.find((x) => x.suite === suite)!.environment;
    return { suite, dataset: env.dataset, prompt: env.prompt, decoding: env.decoding, before, after };
  });
  const out = values.out ?? defaultResultsFile('retention-smollm2', null);
  const run = reports[0]!.environment.policy.model.split('@')[0];
  const command = `bash bench/retention/run.sh ${run} ${values.before} ${values.after}   # beside npx attune dev, see docs/measured.md`;
  writeFileSync(out, `${JSON.stringify({ command, measuredAt: new Date().toISOString(), rows }, null, 2)}\n`);
  console.log('suite  step    solved   score    95 % CI');
  for (const row of rows)
    for (const [when, r] of [
      [values.before, row.before],
      [values.after, row.after],
    ] as const)
      console.log(
        `${row.suite.padEnd(5)}  ${String(when).padStart(4)}  ${`${r.solved}/${r.count}`.padStart(7)}  ${percent(r.score).padStart(7)}  ${percent(r.ci.low)}-${percent(r.ci.high)}`,
      );
  console.log(`wrote ${out}`);
}

main();
