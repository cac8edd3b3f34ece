import { ArtifactStoreRejectedError, ArtifactStoreUnreachableError } from '../artifacts/storeErrors.js';
import { configErrorFrom, ConfigError } from '../config/load.js';
import { RunEndedError } from '../client/trainingRuns.js';
import { isLogFormat, LOG_FORMATS, type LogFormat } from '../logFormat.js';
import { UsageError, type Flags } from './args.js';
import { CODEC_SERVER_FLAGS, codecServerCommand } from './commands/codecServer.js';
import { DEV_FLAGS, devCommand } from './commands/dev.js';
import { REPORT_FLAGS, reportCommand } from './commands/report.js';
import { EVAL_COMPARE_FLAGS, EVAL_FLAGS, evalCommand } from './commands/eval.js';
import { EXPORT_FLAGS, exportCommand } from './commands/export.js';
import { EVALS_FLAGS, evalsCommand, RUNS_FLAGS, runsCommand } from './commands/runs.js';
import { SCHEDULE_FLAGS, scheduleCommand } from './commands/schedule.js';
import { TRAIN_FLAGS, trainCommand } from './commands/train.js';
import { DEMO_FLAGS, demoCommand } from './commands/demo.js';
import { RUN_CONTROL_FLAGS, runControlCommand, type RunControlVerb } from './commands/runControl.js';
import { ROLLOUT_FLAGS, rolloutCommand } from './commands/rollout.js';
import { ROLLOUTS_FLAGS, rolloutsCommand } from './commands/rollouts.js';
import { SCENARIOS_FLAGS, scenariosCommand } from './commands/scenarios.js';
import { WORKER_FLAGS, workerCommand } from './commands/worker.js';
import { WORKER_DEPLOYMENT_FLAGS } from './commands/workerDeployment.js';
import { terminalSafe } from '../core/terminalText.js';
import { COMPLETION_FLAGS, completionCommand } from './commands/completion.js';
import { SHELLS, type CompletionEntry } from './completion.js';

type Command = (argv: string[]) => Promise<number>;

interface CommandEntry {
  run: Command;
  summary: string;
  /** For shell completion (`attune completion`): words that may follow the command. */
  subcommands?: readonly string[];
  /**
   * The flag tables the command parses with, each under the words that lead to it ('' for the
   * command itself, 'compare' for `eval compare`). Shell completion offers their union.
   */
  flags: Readonly<Record<string, Flags>>;
}

/** The same table under each of several subcommands that share it. */
function shared(words: readonly string[], flags: Flags): Record<string, Flags> {
  return Object.fromEntries(words.map((w) => [w, flags]));
}

/** status, pause, resume, stop and set: one command each, all in runControl.ts. */
function runControlEntries(): Record<RunControlVerb, CommandEntry> {
  const summaries: Record<RunControlVerb, string> = {
    status: 'step, phase, rollouts, last metrics and ETA of a run',
    pause: 'pause a run (in-flight rollouts finish)',
    resume: 'resume a paused or blocked run; waiting dialogues retry their failed call',
    stop: 'stop a run after its current step',
    set: 'change hyperparameters of a live run (validated)',
  };
  const entry = (verb: RunControlVerb): CommandEntry => ({
    run: runControlCommand(verb),
    summary: summaries[verb],
    flags: { '': RUN_CONTROL_FLAGS[verb] },
  });
  return {
    status: entry('status'),
    pause: entry('pause'),
    resume: entry('resume'),
    stop: entry('stop'),
    set: entry('set'),
  };
}

const SCHEDULE_SUBCOMMANDS = ['create', 'list', 'pause', 'unpause', 'delete', 'trigger'];

const COMMANDS: Record<string, CommandEntry> = {
  dev: {
    run: devCommand,
    summary: 'start the dev server (UI on :8233), local models and workers',
    flags: { '': DEV_FLAGS },
  },
  worker: {
    run: workerCommand,
    summary: 'run the LLM-I/O workers against a Temporal server; worker deployment set-current|describe',
    subcommands: ['deployment'],
    flags: { '': WORKER_FLAGS, ...shared(['deployment set-current', 'deployment describe'], WORKER_DEPLOYMENT_FLAGS) },
  },
  rollout: { run: rolloutCommand, summary: 'run one dialogue and print its transcript', flags: { '': ROLLOUT_FLAGS } },
  rollouts: {
    run: rolloutsCommand,
    summary: 'list the dialogues of a run that wait at a failed LLM call (rollouts list NAME --waiting)',
    subcommands: ['list'],
    flags: { list: ROLLOUTS_FLAGS },
  },
  scenarios: {
    run: scenariosCommand,
    summary: 'validate, list and import scenarios',
    subcommands: ['validate', 'list', 'import'],
    flags: SCENARIOS_FLAGS,
  },
  report: {
    run: reportCommand,
    summary: 'write an HTML report (and PNG charts) of a run or an evaluation',
    flags: { '': REPORT_FLAGS },
  },
  demo: {
    run: demoCommand,
    summary: 'the embedded default: train, evaluate and report on local models (npm run demo)',
    flags: { '': DEMO_FLAGS },
  },
  train: {
    run: trainCommand,
    summary: 'start (or attach to) an RLVER training run and follow it',
    flags: { '': TRAIN_FLAGS },
  },
  ...runControlEntries(),
  runs: {
    run: runsCommand,
    summary: 'list training runs (runs list), or show one (runs show NAME)',
    subcommands: ['list', 'show'],
    flags: shared(['list', 'show'], RUNS_FLAGS),
  },
  schedule: {
    run: scheduleCommand,
    summary: 'nightly evaluations as Temporal Schedules: create|list|pause|unpause|delete|trigger',
    subcommands: SCHEDULE_SUBCOMMANDS,
    flags: shared(SCHEDULE_SUBCOMMANDS, SCHEDULE_FLAGS),
  },
  eval: {
    run: evalCommand,
    summary: 'run the Sentient benchmark (SAGE protocol); eval compare A B',
    subcommands: ['compare'],
    flags: { '': EVAL_FLAGS, compare: EVAL_COMPARE_FLAGS },
  },
  'codec-server': {
    run: codecServerCommand,
    summary: 'decrypt payloads for the Temporal UI and CLI (codec server)',
    flags: { '': CODEC_SERVER_FLAGS },
  },
  completion: {
    run: (argv) => completionCommand(argv, completionEntries()),
    summary: 'print a shell completion script: attune completion bash|zsh',
    subcommands: SHELLS,
    flags: { '': COMPLETION_FLAGS },
  },
  evals: {
    run: evalsCommand,
    summary: 'list evaluations with their scores (evals list)',
    subcommands: ['list'],
    flags: { list: EVALS_FLAGS },
  },
  export: {
    run: exportCommand,
    summary: 'write a run step as a Hugging Face model directory (NAME@STEP --out DIR)',
    flags: { '': EXPORT_FLAGS },
  },
};

/** Every flag table of every command, with the words that reach its parser (`attune eval compare`). */
export function commandFlagTables(): { command: string; words: string[]; flags: Flags }[] {
  return Object.entries(COMMANDS).flatMap(([command, c]) =>
    Object.entries(c.flags).map(([words, flags]) => ({ command, words: words.split(' ').filter(Boolean), flags })),
  );
}

/** The command table as shell completion sees it: each command's flags, the union over its subcommands. */
export function completionEntries(): CompletionEntry[] {
  return Object.entries(COMMANDS).map(([name, c]) => ({
    name,
    subcommands: c.subcommands ?? [],
    flags: [...new Set(Object.values(c.flags).flatMap((table) => Object.keys(table).map((flag) => `--${flag}`)))],
  }));
}

export function topHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return [
    'attune: RLVER training of empathetic dialogue models as durable Temporal workflows',
    '',
    'Usage: attune <command> [options]      (attune <command> --help for details)',
    '',
    'Global options:',
    '  --log-format human|json   log lines on stderr; default human on a terminal, JSON otherwise (ATTUNE_LOG_FORMAT)',
    '',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    'Environment: POLICY_BASE_URL POLICY_MODEL POLICY_API_KEY SIMULATOR_BASE_URL SIMULATOR_MODEL',
    '             SIMULATOR_API_KEY TEMPORAL_ADDRESS TEMPORAL_NAMESPACE ATTUNE_HOME TRAINER_TOKEN',
    '             TEMPORAL_TLS_CA TEMPORAL_TLS_CERT TEMPORAL_TLS_KEY TEMPORAL_TLS_SERVER_NAME TEMPORAL_API_KEY_ENV',
    '             ATTUNE_CODEC_KEYS_FILE ATTUNE_CODEC_SERVER_TOKEN (payload encryption: see SECURITY.md)',
    '             ATTUNE_LOG_FORMAT ATTUNE_LOG_LEVEL ATTUNE_TEMPORAL_LOG_LEVEL (logging)',
    '             ATTUNE_WORKER_BUILD_ID ATTUNE_WORKER_DEPLOYMENT_NAME (worker versioning)',
  ].join('\n');
}

/**
 * `--log-format human|json` is global: accepted before or after the command name, and passed to
 * every process this one starts through ATTUNE_LOG_FORMAT.
 */
export function takeGlobalOptions(argv: string[]): { argv: string[]; logFormat?: LogFormat } {
  const out: string[] = [];
  let logFormat: LogFormat | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const inline = /^--log-format=(.*)$/.exec(arg);
    if (arg !== '--log-format' && !inline) {
      out.push(arg);
      continue;
    }
    const value = inline ? inline[1] : argv[++i];
    if (!isLogFormat(value))
      throw new UsageError(`--log-format must be one of ${LOG_FORMATS.join(', ')}, got ${JSON.stringify(value ?? '')}`);
    logFormat = value;
  }
  return { argv: out, ...(logFormat ? { logFormat } : {}) };
}

export async function main(argv: string[]): Promise<number> {
  let global: ReturnType<typeof takeGlobalOptions>;
  try {
    global = takeGlobalOptions(argv);
  } catch (error) {
    process.stderr.write(`attune: ${(error as Error).message}\n`);
    return 2;
  }
  if (global.logFormat) process.env.ATTUNE_LOG_FORMAT = global.logFormat;
  const [name, ...rest] = global.argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${topHelp()}\n`);
    return name === undefined ? 1 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`attune: unknown command "${name}"\n\n${topHelp()}\n`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`attune ${name}: ${terminalSafe(error.message)}\n`);
      return 2;
    }
    if (
      error instanceof RunEndedError ||
      error instanceof ArtifactStoreRejectedError ||
      error instanceof ArtifactStoreUnreachableError
    ) {
      process.stderr.write(`attune ${name}: ${terminalSafe(error.message)}\n`);
      return 1;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`attune ${name}: ${terminalSafe(configErrorFrom(error))}\n`);
      return 2;
    }
    throw error;
  }
}

/** An error and its causes, one per line: "Workflow execution failed" alone tells an operator nothing. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 6; depth++) {
    parts.push(current instanceof Error ? current.message : String(current));
    current = current instanceof Error ? (current as Error & { cause?: unknown }).cause : undefined;
  }
  // Errors quote model replies and scenario text, and this goes to the operator's terminal.
  return terminalSafe(parts.filter((p, i) => p && parts.indexOf(p) === i).join('\n  caused by: '));
}
