import { listEvaluations, listRuns } from '../../client/runListing.js';
import { isValidName, NAME_RULE } from '../../core/names.js';
import { runDetail } from '../../client/runDetail.js';
import { connectTemporal } from '../../temporal/connect.js';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext } from '../context.js';
import { renderEvaluationRows, renderRunDetail, renderRunRows } from '../render/runListing.js';

export const RUNS_FLAGS = {
  json: { type: 'boolean', help: 'a JSON array (list) or object (show)' },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const EVALS_FLAGS = {
  run: { type: 'string', value: 'NAME', help: 'only the evaluations of that training run' },
  json: { type: 'boolean', help: 'a JSON array' },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const RUNS_HELP = `attune runs list [--json]
attune runs show NAME [--json]

list: every training run the Temporal server knows, newest first: name, phase, step (the last
applied), last reward (the step's mean), started (the run's first start), updated. From the search
attributes, which the server indexes a moment after they change.
show: one run: the latest published version, per step the version its dialogues sampled from, the
reward, the success rate, the evaluation score and the off-policy figures (samples per staleness,
importance-weight mean and max, share truncated; - where the trainer reported none), and the run's
evaluations.

${flagHelp(RUNS_FLAGS)}`;

export const EVALS_HELP = `attune evals list [--run NAME] [--json]

Every evaluation (by hand, scheduled, or during training), newest first: id, score (the Sentient
score, 0-100, once finished), run, step, status, started, updated.

${flagHelp(EVALS_FLAGS)}`;

function checkedName(name: string): string {
  if (!isValidName(name)) throw new UsageError(`run name "${name}" is not a valid name (${NAME_RULE})`);
  return name;
}

async function withTemporal<T>(
  values: { config?: string | undefined; set?: string[] | undefined },
  component: string,
  fn: (ctx: ReturnType<typeof commandContext>, temporal: Awaited<ReturnType<typeof connectTemporal>>) => Promise<T>,
): Promise<T> {
  const ctx = commandContext(values, component);
  // The embedded server keeps its state on disk: starting it lists the runs of earlier commands.
  const temporal = await connectTemporal(ctx.config, ctx.log, { startIfMissing: true, headless: true });
  try {
    return await fn(ctx, temporal);
  } finally {
    await temporal.close();
  }
}

export async function runsCommand(argv: string[]): Promise<number> {
  // Not a runs flag, but one an operator may reach for here: say where it belongs.
  if (argv.some((a) => a === '--run' || a.startsWith('--run=')))
    throw new UsageError('--run belongs to `attune evals list`');
  const { values, positionals } = parseCommand(argv, RUNS_FLAGS);
  const [verb, ...rest] = positionals;
  if (values.help || verb === undefined) {
    process.stdout.write(`${RUNS_HELP}\n`);
    return values.help ? 0 : 2;
  }
  if (verb === 'list') {
    if (rest.length > 0) throw new UsageError(`runs list takes no arguments (got ${rest.join(' ')})`);
    const rows = await withTemporal(values, 'runs', (_ctx, t) => listRuns(t.client));
    process.stdout.write(values.json ? `${JSON.stringify(rows)}\n` : `${renderRunRows(rows)}\n`);
    return 0;
  }
  if (verb === 'show') {
    const [name, ...extra] = rest;
    if (!name || extra.length > 0) throw new UsageError('runs show needs one run NAME');
    const detail = await withTemporal(values, 'runs', (ctx, t) => runDetail(t.client, ctx.store, checkedName(name)));
    if (detail === null) {
      process.stderr.write(`attune runs: no training run named ${name} (attune runs list shows them)\n`);
      return 1;
    }
    for (const note of detail.notes) process.stderr.write(`attune runs: warning: ${note}\n`);
    process.stdout.write(values.json ? `${JSON.stringify(detail)}\n` : `${renderRunDetail(detail)}\n`);
    return 0;
  }
  throw new UsageError(`unknown subcommand "${verb}": expected list or show`);
}

export async function evalsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, EVALS_FLAGS);
  const [verb, ...rest] = positionals;
  if (values.help || verb === undefined) {
    process.stdout.write(`${EVALS_HELP}\n`);
    return values.help ? 0 : 2;
  }
  if (verb !== 'list') throw new UsageError(`unknown subcommand "${verb}": expected list`);
  if (rest.length > 0) throw new UsageError(`evals list takes no arguments (got ${rest.join(' ')})`);
  if (values.run !== undefined) checkedName(values.run);
  const rows = await withTemporal(values, 'evals', (_ctx, t) => listEvaluations(t.client, values.run));
  process.stdout.write(values.json ? `${JSON.stringify(rows)}\n` : `${renderEvaluationRows(rows)}\n`);
  return 0;
}
