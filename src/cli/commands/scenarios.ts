import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { loadScenarioLibrary } from '../../scenarios/library.js';
import { importSageJsonl } from '../../scenarios/importSage.js';
import { flagHelp, HELP_FLAG, parseCommand, UsageError, type Flags } from '../args.js';
import { terminalSafe } from '../../core/terminalText.js';

export const SCENARIOS_HELP = `attune scenarios <command>

  validate [DIR]                 check every scenario file under DIR (default: scenarios/);
                                 exits non-zero naming the file and field of each problem
  list [DIR] [--json]            list scenarios (--json: an array with id, language, goalType, ...)
  import --format sage FILE.jsonl --out DIR [--prefix P]
                                 import SAGE / RLVER profile files (JSONL); every record keeps its
                                 original text; bad lines are reported by number, the rest imported`;

/** Each subcommand's flags (scenarios reads no configuration). */
export const SCENARIOS_FLAGS = {
  validate: HELP_FLAG,
  list: {
    json: { type: 'boolean', help: 'an array with id, language, goalType, personality, name, hasFirstMessage, file' },
    ...HELP_FLAG,
  },
  import: {
    format: { type: 'string', value: 'FORMAT', help: 'sage (required; the only format so far)' },
    out: { type: 'string', short: 'o', value: 'DIR', help: 'the directory to write the scenario files to' },
    prefix: { type: 'string', value: 'P', help: 'prefix of the imported scenario ids (default sage)' },
    ...HELP_FLAG,
  },
} as const satisfies Record<string, Flags>;

function defaultDir(): string {
  return resolve(process.cwd(), 'scenarios');
}

function validate(argv: string[]): number {
  const { values, positionals } = parseCommand(argv, SCENARIOS_FLAGS.validate);
  if (values.help) {
    process.stdout.write(
      `attune scenarios validate [DIR]\n\nValidates every .yaml/.yml/.json scenario under DIR (default scenarios/).\n\n${flagHelp(SCENARIOS_FLAGS.validate)}\n`,
    );
    return 0;
  }
  const dir = positionals[0] ?? defaultDir();
  const { scenarios, problems } = loadScenarioLibrary(dir);
  for (const p of problems) process.stderr.write(terminalSafe(`${p.file}: ${p.message}\n`));
  if (problems.length > 0) {
    process.stderr.write(`${problems.length} problem(s); ${scenarios.length} valid scenario(s) in ${dir}\n`);
    return 1;
  }
  process.stdout.write(`${scenarios.length} valid scenario(s) in ${dir}\n`);
  return 0;
}

function list(argv: string[]): number {
  const { values, positionals } = parseCommand(argv, SCENARIOS_FLAGS.list);
  if (values.help) {
    process.stdout.write(`attune scenarios list [DIR] [--json]\n\n${flagHelp(SCENARIOS_FLAGS.list)}\n`);
    return 0;
  }
  const dir = positionals[0] ?? defaultDir();
  const { scenarios, problems, files } = loadScenarioLibrary(dir);
  for (const p of problems) process.stderr.write(terminalSafe(`${p.file}: ${p.message}\n`));
  const rows = scenarios.map((s) => ({
    id: s.id,
    language: s.language,
    goalType: s.goalType,
    personality: s.personality,
    name: s.persona.name ?? null,
    hasFirstMessage: s.firstMessage !== undefined,
    file: files.get(s.id) ?? null,
  }));
  if (values.json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  } else {
    const width = Math.max(2, ...rows.map((r) => r.id.length));
    process.stdout.write(`${'ID'.padEnd(width)}  LANG  ${'GOAL TYPE'.padEnd(20)}  PERSONALITY  NAME\n`);
    for (const r of rows)
      process.stdout.write(
        terminalSafe(
          `${r.id.padEnd(width)}  ${r.language.padEnd(4)}  ${r.goalType.padEnd(20)}  ${r.personality.padEnd(11)}  ${r.name ?? ''}\n`,
        ),
      );
    process.stdout.write(`${rows.length} scenario(s)\n`);
  }
  return problems.length > 0 ? 1 : 0;
}

function importCommand(argv: string[]): number {
  const { values, positionals } = parseCommand(argv, SCENARIOS_FLAGS.import);
  if (values.help) {
    process.stdout.write(
      `attune scenarios import --format sage FILE.jsonl --out DIR [--prefix P]\n\n${flagHelp(SCENARIOS_FLAGS.import)}\n`,
    );
    return 0;
  }
  if (values.format !== 'sage') throw new UsageError('--format sage is required (the only format so far)');
  const file = positionals[0];
  if (!file) throw new UsageError('the JSONL file to import is required');
  if (!values.out) throw new UsageError('--out DIR is required');
  const result = importSageJsonl(readFileSync(file, 'utf8'), { file: basename(file), prefix: values.prefix ?? 'sage' });
  mkdirSync(values.out, { recursive: true });
  for (const { scenario } of result.scenarios) {
    writeFileSync(join(values.out, `${scenario.id}.yaml`), stringify(scenario, { lineWidth: 0 }), 'utf8');
  }
  for (const p of result.problems) process.stderr.write(terminalSafe(`${file}:${p.line}: ${p.message}\n`));
  process.stdout.write(
    `imported ${result.scenarios.length} scenario(s) into ${values.out}${result.problems.length > 0 ? `; ${result.problems.length} bad line(s) skipped` : ''}\n`,
  );
  return result.problems.length > 0 ? 1 : 0;
}

export async function scenariosCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'validate':
      return validate(rest);
    case 'list':
      return list(rest);
    case 'import':
      return importCommand(rest);
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(`${SCENARIOS_HELP}\n`);
      return sub === undefined ? 1 : 0;
    default:
      throw new UsageError(`unknown scenarios command "${sub}"\n\n${SCENARIOS_HELP}`);
  }
}
