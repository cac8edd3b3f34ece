import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultResultsFile } from '../resultsFile.js';
import { loadConfig } from '../../src/config/load.js';
import { ROLLOUT_MODES } from '../../test/support/rolloutModes.js';
import type { WorkersJob } from './protocol.js';

/** The benchmark's command line: its help text, and the options it parses into. */

export const HELP = `Orchestration benchmark: Attune (Temporal) vs a plain loop vs the reference RLVER loop shape.

Usage: npm run bench:orchestration [-- options]

  --latencies LIST        fake LLM latency per call, ms (default 0,100,1000)
  --concurrency LIST      dialogues at once (default 16,64,256)
  --turns N               assistant turns per dialogue (default 8)
  --quick                 smoke run: latencies 0,100, concurrency 16, 4 turns
  --reference-budget S    seconds of timed sequential simulator calls per cell in the reference
                          loop; beyond that the rest is extrapolated (default 3)
  --db MODE               dev-server persistence:
                            wal     SQLite file with journal_mode=wal, synchronous=normal (default;
                                    what src/temporal/devServer.ts starts)
                            file    SQLite file with SQLite's defaults (rollback journal, fsync on
                                    every commit)
                            memory  in-memory SQLite (what the test suite uses)
  --sqlite-pragma P=V     extra dev-server --sqlite-pragma (repeatable)
  --dynamic-config K=V    extra dev-server --dynamic-config-value (repeatable)
  --variants LIST         which to run: attune, plain, reference and the attune-* ones below other
                          than the default's (default all); attune runs the config's default
                          (rollout.llmCalls, rollout.activityPer), the others the same workflows with
                            attune-call        an activity per LLM call on its endpoint's queue
                            attune-local       a local activity per LLM call (no journal)
                            attune-turn        an activity per turn on the turns queue
                            attune-turn-local  a local activity per turn, its calls journalled
  --out FILE              results file (default bench/results/orchestration.json; --quick
                          bench/results/orchestration-quick.json)
  --update                replace only the measured cells in an existing results file (to re-measure
                          some cells, e.g. ones another workload on the machine disturbed)
  --keep-alive MS         keep-alive the fake server advertises (default 30000; the test
                          suite's 1000 makes Node's fetch open a connection per call)
  --max-minutes M         stop everything after M minutes (default 20)
  --worker-processes N    LLM-I/O worker processes per attune variant (default 1; CPU and peak RSS
                          are summed over them)
  --worker-option Q.K=V   override a Worker option for an experiment, Q = all|rollouts|policy|
                          simulator, V as JSON (e.g. rollouts.maxCachedWorkflows=500) (repeatable)
  --bundle WHICH          workflow bundle: full (src/workflows, as the workers run it; default) or
                          rollout-only (experiment: the rollout workflow alone)
  --profile DIR           write V8 CPU profiles of the worker and loop processes to DIR
  --help                  this text

Progress: JSON lines on stderr. Result: a table on stdout and the JSON file.`;

export interface Options {
  latencies: number[];
  concurrency: number[];
  turns: number;
  referenceBudgetS: number;
  db: 'wal' | 'file' | 'memory';
  sqlitePragmas: string[];
  dynamicConfig: string[];
  variants: Set<string>;
  out: string;
  maxMinutes: number;
  workerProcesses: number;
  profileDir: string | null;
  keepAliveMs: number;
  bundle: 'full' | 'rollout-only';
  update: boolean;
  workerOverrides: WorkersJob['workerOverrides'];
}

/** Every way to run the rollout workflow, by variant name, with its key in an entry. */
const MODES = {
  'attune-call': { key: 'per_call', set: ROLLOUT_MODES.perCall },
  'attune-local': { key: 'local', set: ROLLOUT_MODES.localPerCall },
  'attune-turn': { key: 'turn', set: ROLLOUT_MODES.turnActivity },
  'attune-turn-local': { key: 'turn_local', set: ROLLOUT_MODES.localTurn },
} as const;
export type AlternativeKey = (typeof MODES)[keyof typeof MODES]['key'];

/** The config's default mode, which the `attune` variant runs. */
export const DEFAULT_MODE = (({ llmCalls, activityPer }) => ({ llmCalls, activityPer }))(
  loadConfig({ env: {} }).rollout,
);

/**
 * The other ways to run the same rollout workflow, each on its own dev server and worker process and
 * filling its key of an entry: every mode but the default's (which is the `attune` variant).
 */
export const ALTERNATIVES: Record<string, { key: AlternativeKey; set: readonly string[] }> = Object.fromEntries(
  Object.entries(MODES).filter(([, { set }]) => {
    const settings: readonly string[] = set;
    return (
      !settings.includes(`rollout.llmCalls=${DEFAULT_MODE.llmCalls}`) ||
      !settings.includes(`rollout.activityPer=${DEFAULT_MODE.activityPer}`)
    );
  }),
);

/** Every variant `--variants` may name. */
const VARIANTS = ['attune', ...Object.keys(ALTERNATIVES), 'plain', 'reference'];

/** Write-ahead log, and fsync at checkpoints rather than at every commit: survives a killed process, not a power cut. */
const WAL_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'];

function numberList(text: string, name: string): number[] {
  const values = text.split(',').map((s) => Number(s.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 0))
    throw new Error(`--${name}: expected a comma-separated list of non-negative integers, got "${text}"`);
  return values;
}

function parseWorkerOption(text: string): WorkersJob['workerOverrides'][number] {
  const match = /^(all|rollouts|policy|simulator)\.([A-Za-z][A-Za-z0-9]*)=(.*)$/.exec(text);
  if (!match)
    throw new Error(
      `--worker-option ${text}: expected QUEUE.KEY=JSON with QUEUE one of all, rollouts, policy, simulator`,
    );
  let value: unknown;
  try {
    value = JSON.parse(match[3]!);
  } catch {
    throw new Error(`--worker-option ${text}: the value must be JSON`);
  }
  return { queue: match[1] as 'all', key: match[2]!, value };
}

export function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      latencies: { type: 'string' },
      concurrency: { type: 'string' },
      turns: { type: 'string' },
      quick: { type: 'boolean', default: false },
      'reference-budget': { type: 'string' },
      db: { type: 'string', default: 'wal' },
      'sqlite-pragma': { type: 'string', multiple: true, default: [] },
      'dynamic-config': { type: 'string', multiple: true, default: [] },
      variants: { type: 'string', default: VARIANTS.join(',') },
      out: { type: 'string' },
      'max-minutes': { type: 'string', default: '20' },
      'worker-processes': { type: 'string', default: '1' },
      profile: { type: 'string' },
      'worker-option': { type: 'string', multiple: true, default: [] },
      'keep-alive': { type: 'string', default: '30000' },
      bundle: { type: 'string', default: 'full' },
      update: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return null;
  const quick = values.quick ?? false;
  const latencies = values.latencies ? numberList(values.latencies, 'latencies') : quick ? [0, 100] : [0, 100, 1000];
  const concurrency = values.concurrency ? numberList(values.concurrency, 'concurrency') : quick ? [16] : [16, 64, 256];
  if (concurrency.some((c) => c < 1)) throw new Error('--concurrency: each value must be at least 1');
  const turns = values.turns ? Number(values.turns) : quick ? 4 : 8;
  if (!Number.isInteger(turns) || turns < 1 || turns > 50) throw new Error('--turns: an integer from 1 to 50');
  const referenceBudgetS = Number(values['reference-budget'] ?? 3);
  if (!(referenceBudgetS > 0)) throw new Error('--reference-budget: a positive number of seconds');
  if (values.bundle !== 'full' && values.bundle !== 'rollout-only') throw new Error('--bundle: full or rollout-only');
  if (values.db !== 'wal' && values.db !== 'file' && values.db !== 'memory')
    throw new Error('--db: wal, file or memory');
  const variants = new Set(
    (values.variants ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  for (const v of variants) if (!VARIANTS.includes(v)) throw new Error(`--variants: unknown variant "${v}"`);
  const workerProcesses = Number(values['worker-processes']);
  if (!Number.isInteger(workerProcesses) || workerProcesses < 1 || workerProcesses > 16)
    throw new Error('--worker-processes: an integer from 1 to 16');
  const maxMinutes = Number(values['max-minutes']);
  if (!(maxMinutes > 0)) throw new Error('--max-minutes: a positive number');
  return {
    latencies,
    concurrency,
    turns,
    referenceBudgetS,
    db: values.db,
    sqlitePragmas: [...(values.db === 'wal' ? WAL_PRAGMAS : []), ...(values['sqlite-pragma'] ?? [])],
    dynamicConfig: values['dynamic-config'] ?? [],
    variants,
    out: resolve(values.out ?? defaultResultsFile('orchestration', quick ? 'quick' : null)),
    maxMinutes,
    workerProcesses,
    profileDir: values.profile ? resolve(values.profile) : null,
    workerOverrides: (values['worker-option'] ?? []).map(parseWorkerOption),
    keepAliveMs: Number(values['keep-alive']),
    bundle: values.bundle === 'rollout-only' ? 'rollout-only' : 'full',
    update: values.update ?? false,
  };
}
