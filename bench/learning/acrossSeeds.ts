/**
 * The comparison over seeds: reads the results files of several `bench:learning` invocations that
 * differ only in --seed, and prints per setting (credit mode, staleness, first-finished steps) the
 * step reaching 90 % of the rise and the last three steps' mean reward, each as mean ± 95 % CI over
 * the seeds. A run that never reached 90 % counts as its step count + 1 (said in the table), so a
 * slow setting is not flattered by dropping it. Each setting that overlaps rollouts with training is
 * then judged against the synchronous run of its credit mode (seedParity.ts).
 *
 *   npm run bench:learning:seeds -- --out FILE RESULTS.json...
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatMeanCi, meanCi } from './seedSpread.js';
import { isSynchronous, parityOver, settingName, type Parity } from './seedParity.js';

const HELP = `npm run bench:learning:seeds -- --out FILE RESULTS.json...

Per setting (credit mode, staleness, first-finished steps) over the given bench:learning results
files (one per seed): steps to 90 % of the possible rise and the last three steps' mean reward,
mean ± 95 % CI (Student's t). Then the parity of each overlapping setting: whether its mean
last-three-steps reward lies within the synchronous run's spread between the seeds. Writes FILE.`;

interface Run {
  credit: string;
  staleness?: number;
  stepDialogues?: string;
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
const settings = [...new Set(files.flatMap((f) => f.results.runs.map(settingName)))];
const table = settings.map((setting) => {
  const runs = files.map(({ file, results }) => {
    const run = results.runs.find((r) => settingName(r) === setting);
    if (!run) throw new Error(`${file}: no run of setting ${setting}`);
    return {
      seed: results.seed,
      step90: run.step90 ?? results.steps + 1,
      reached: run.step90 !== null,
      last3: run.last3,
    };
  });
  const first = files[0]!.results.runs.find((r) => settingName(r) === setting)!;
  return {
    setting,
    credit: first.credit,
    synchronous: isSynchronous(first),
    seeds: runs.map((r) => r.seed),
    step90: meanCi(runs.map((r) => r.step90)),
    unreached: runs.filter((r) => !r.reached).length,
    last3: meanCi(runs.map((r) => r.last3)),
    runs,
  };
});
const parity: ({ setting: string; against: string } & Parity)[] = table.flatMap((row) => {
  const synchronous = table.find((r) => r.synchronous && r.credit === row.credit);
  if (row.synchronous || !synchronous) return [];
  return [{ setting: row.setting, against: synchronous.setting, ...parityOver(synchronous.runs, row.runs) }];
});
process.stdout.write(
  'setting      seeds  steps to 90 % (mean ± 95 % CI)  never reached  last-3 reward (mean ± 95 % CI)\n',
);
for (const row of table)
  process.stdout.write(
    `${row.setting.padEnd(12)} ${String(row.seeds.length).padEnd(6)} ${formatMeanCi(row.step90, 1).padEnd(31)} ${String(row.unreached).padEnd(14)} ${formatMeanCi(row.last3, 3)}\n`,
  );
for (const p of parity)
  process.stdout.write(
    `parity ${p.setting} against ${p.against}: last-3 mean ${p.mean.toFixed(3)}, ${p.withinSpread ? 'within' : 'NOT within'} the spread between seeds ${p.spread.min.toFixed(3)}-${p.spread.max.toFixed(3)}; ${p.seedsWithin} of ${p.seeds} seeds within it\n`,
  );
writeFileSync(
  values.out,
  `${JSON.stringify({ task: files[0]!.results.task ?? 'brevity', files: positionals, credits: table, parity }, null, 2)}\n`,
);
process.stdout.write(`written to ${values.out}\n`);
