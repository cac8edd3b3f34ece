import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultResultsFile } from '../resultsFile.js';

/** The load benchmark's command line: its help text, and the options it parses into. */

export const HELP = `Load benchmark: many concurrent rollouts on the PostgreSQL Temporal cluster, the fake LLM
answering with a long-tailed latency and occasional HTTP 500s.

Usage: npm run bench:load [-- options]

  --dialogues N           rollouts started at once (default 1024)
  --turns N               assistant turns per dialogue (default 8)
  --worker-processes N    Attune LLM-I/O worker processes (default 2)
  --median-ms MS          median latency of one LLM call (default 2000)
  --p99-ms MS             99th percentile of it (default 10000); lognormal in between:
                          mu = ln(median), sigma = ln(p99 / median) / 2.326, clipped at 5 x p99
  --failure-rate F        share of LLM calls answered HTTP 500, retried by Attune (default 0.01)
  --seed N                seed of the latency and failure draws (default 1)
  --set KEY=VALUE         config override for the workers and the starter, after the bench's own
                          (repeatable), e.g. --set rollout.llmCalls=local --set rollout.activityPer=turn
  --out FILE              results file (default bench/results/load.json; --quick
                          bench/results/load-quick.json)
  --max-minutes M         stop everything after M minutes, the results written with what was measured
                          (default 30; the dialogues get all but 2 minutes of it, less the cluster's start)
  --quick                 smoke run: 48 dialogues, 3 turns, median 200 ms, p99 1000 ms
                          (the flags above still override)
  --help                  this text

It brings up scripts/temporal-cluster (PostgreSQL and the four Temporal services), the workers and
the fake LLM server, runs one warm-up of a few 1-turn dialogues, then the timed run, and takes
everything down again. It exits non-zero when a dialogue failed or did not finish, or when an LLM
call was answered twice, after writing the results file.

Progress: JSON lines on stderr. Result: a table on stdout and the JSON file.`;

export interface Options {
  dialogues: number;
  turns: number;
  workerProcesses: number;
  medianMs: number;
  p99Ms: number;
  failureRate: number;
  seed: number;
  set: string[];
  out: string;
  maxMinutes: number;
  quick: boolean;
}

function integer(text: string | undefined, fallback: number, name: string, min: number, max: number): number {
  const value = text === undefined ? fallback : Number(text);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new Error(`--${name}: an integer from ${min} to ${max}, got "${text}"`);
  return value;
}

function positive(text: string | undefined, fallback: number, name: string): number {
  const value = text === undefined ? fallback : Number(text);
  if (!(value > 0) || !Number.isFinite(value)) throw new Error(`--${name}: a positive number, got "${text}"`);
  return value;
}

/** The options, or null for --help. */
export function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      dialogues: { type: 'string' },
      turns: { type: 'string' },
      'worker-processes': { type: 'string' },
      'median-ms': { type: 'string' },
      'p99-ms': { type: 'string' },
      'failure-rate': { type: 'string' },
      seed: { type: 'string' },
      set: { type: 'string', multiple: true, default: [] },
      out: { type: 'string' },
      'max-minutes': { type: 'string' },
      quick: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return null;
  const quick = values.quick ?? false;
  const medianMs = positive(values['median-ms'], quick ? 200 : 2000, 'median-ms');
  const p99Ms = positive(values['p99-ms'], quick ? 1000 : 10_000, 'p99-ms');
  if (p99Ms < medianMs) throw new Error('--p99-ms: at least --median-ms');
  const failureRate = values['failure-rate'] === undefined ? 0.01 : Number(values['failure-rate']);
  if (!(failureRate >= 0 && failureRate < 0.5)) throw new Error('--failure-rate: a number from 0 to below 0.5');
  for (const entry of values.set ?? [])
    if (!/^[A-Za-z][\w.]*=/.test(entry)) throw new Error(`--set ${entry}: expected KEY=VALUE`);
  return {
    dialogues: integer(values.dialogues, quick ? 48 : 1024, 'dialogues', 1, 10_000),
    turns: integer(values.turns, quick ? 3 : 8, 'turns', 1, 50),
    workerProcesses: integer(values['worker-processes'], 2, 'worker-processes', 1, 16),
    medianMs,
    p99Ms,
    failureRate,
    seed: integer(values.seed, 1, 'seed', 0, 2 ** 31 - 1),
    set: values.set ?? [],
    out: resolve(values.out ?? defaultResultsFile('load', quick ? 'quick' : null)),
    maxMinutes: positive(values['max-minutes'], 30, 'max-minutes'),
    quick,
  };
}
