/**
 * The credit comparison over seeds: reads the results files of several `bench:learning` invocations
 * that differ only in --seed, and prints per credit mode the step reaching 90 % of the rise and the
 * last three steps' mean reward, each as mean ± 95 % CI over the seeds. A run that never reached 90 %
 * counts as its step count + 1 (said in the table), so a slow credit is not flattered by dropping it.
 *
 *   npm run bench:learning:seeds -- --out FILE RESULTS.json...
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatMeanCi, meanCi } from './seedSpread.js';

const HELP = `npm run bench:learning:seeds -- --out FILE RESULTS.json...

Per credit mode over the given bench:learning results files (one per seed): steps to 90 % of the
possible rise and the last three steps' mean reward, mean ± 95 % CI (Student's t). Writes FILE.`;

interface Run {
  credit: string;
  step90: number | null;
  last3: number;
}
interface Results {
  seed: number;
  steps: number;
  task?: string;
  runs: Run[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { out: { type: 'string' }, help: { type: 'boolean', default: false } },
});
if (values.help || positionals.length === 0 || !values.out) {
  process.stdout.write(`${HELP}\n`);
  process.exit(values.help ? 0 : 2);
}
const files = positionals.map((f) => ({ file: f, results: JSON.parse(readFileSync(f, 'utf8')) as Results }));
const credits = [...new Set(files.flatMap((f) => f.results.runs.map((r) => r.credit)))];
const table = credits.map((credit) => {
  const runs = files.map(({ file, results }) => {
    const run = results.runs.find((r) => r.credit === credit);
    if (!run) throw new Error(`${file}: no run with credit ${credit}`);
    return {
      seed: results.seed,
      step90: run.step90 ?? results.steps + 1,
      reached: run.step90 !== null,
      last3: run.last3,
    };
  });
  return {
    credit,
    seeds: runs.map((r) => r.seed),
    step90: meanCi(runs.map((r) => r.step90)),
    unreached: runs.filter((r) => !r.reached).length,
    last3: meanCi(runs.map((r) => r.last3)),
    runs,
  };
});
process.stdout.write('credit  seeds  steps to 90 % (mean ± 95 % CI)  never reached  last-3 reward (mean ± 95 % CI)\n');
for (const row of table)
  process.stdout.write(
    `${row.credit.padEnd(7)} ${String(row.seeds.length).padEnd(6)} ${formatMeanCi(row.step90, 1).padEnd(31)} ${String(row.unreached).padEnd(14)} ${formatMeanCi(row.last3, 3)}\n`,
  );
writeFileSync(
  values.out,
  `${JSON.stringify({ task: files[0]!.results.task ?? 'brevity', files: positionals, credits: table }, null, 2)}\n`,
);
process.stdout.write(`written to ${values.out}\n`);
