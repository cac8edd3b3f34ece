import { configErrorFrom, ConfigError } from '../config/load.js';
import { RunEndedError } from '../client/trainingRuns.js';
import { isLogFormat, LOG_FORMATS, type LogFormat } from '../logFormat.js';
import { UsageError } from './args.js';
import { codecServerCommand } from './commands/codecServer.js';
import { devCommand } from './commands/dev.js';
import { reportCommand } from './commands/report.js';
import { evalCommand } from './commands/eval.js';
import { exportCommand } from './commands/export.js';
import { evalsCommand, runsCommand } from './commands/runs.js';
import { scheduleCommand } from './commands/schedule.js';
import { trainCommand } from './commands/train.js';
import { demoCommand } from './commands/demo.js';
import { runControlCommand } from './commands/runControl.js';
import { rolloutCommand } from './commands/rollout.js';
import { rolloutsCommand } from './commands/rollouts.js';
import { scenariosCommand } from './commands/scenarios.js';
import { workerCommand } from './commands/worker.js';
import { terminalSafe } from '../core/terminalText.js';
import { completionCommand } from './commands/completion.js';
import { SHELLS, type CompletionEntry } from './completion.js';

type Command = (argv: string[]) => Promise<number>;

interface CommandEntry {
  run: Command;
  summary: string;
  /** For shell completion (`attune completion`): words that may follow the command, and its flags. */
  subcommands?: readonly string[];
  flags: readonly string[];
}

const CONFIG_FLAGS = ['--config', '--set'];

const COMMANDS: Record<string, CommandEntry> = {
  dev: {
    run: devCommand,
    summary: 'start the dev server (UI on :8233), local models and workers',
    flags: CONFIG_FLAGS,
  },
  worker: {
    run: workerCommand,
    summary: 'run the LLM-I/O workers against a Temporal server; worker deployment set-current|describe',
    subcommands: ['deployment'],
    flags: ['--role', '--deployment-version', '--deployment-name', '--build-id', '--json', ...CONFIG_FLAGS],
  },
  rollout: {
    run: rolloutCommand,
    summary: 'run one dialogue and print its transcript',
    flags: [
      '--scenario',
      '--scenarios',
      '--seed',
      '--max-turns',
      '--initial-emotion',
      '--think',
      '--json',
      ...CONFIG_FLAGS,
    ],
  },
  scenarios: {
    run: scenariosCommand,
    summary: 'validate, list and import scenarios',
    subcommands: ['validate', 'list', 'import'],
    flags: ['--json', '--format', '--out', '--prefix'],
  },
  report: {
    run: reportCommand,
    summary: 'write an HTML report (and PNG charts) of a run or an evaluation',
    flags: ['--out', '--html-only', ...CONFIG_FLAGS],
  },
  demo: {
    run: demoCommand,
    summary: 'the embedded default: train, evaluate and report on local models (npm run demo)',
    flags: ['--resume', '--steps', '--scenarios-per-step', '--samples', '--turns', '--eval-scenarios', ...CONFIG_FLAGS],
  },
  train: {
    run: trainCommand,
    summary: 'start (or attach to) an RLVER training run and follow it',
    flags: ['--name', '--detach', '--continue', ...CONFIG_FLAGS],
  },
  status: {
    run: runControlCommand('status'),
    summary: 'step, phase, rollouts, last metrics and ETA of a run',
    flags: ['--json', ...CONFIG_FLAGS],
  },
  pause: { run: runControlCommand('pause'), summary: 'pause a run (in-flight rollouts finish)', flags: CONFIG_FLAGS },
  resume: {
    run: runControlCommand('resume'),
    summary: 'resume a paused or blocked run; waiting dialogues retry their failed call',
    flags: CONFIG_FLAGS,
  },
  stop: { run: runControlCommand('stop'), summary: 'stop a run after its current step', flags: CONFIG_FLAGS },
  set: {
    run: runControlCommand('set'),
    summary: 'change hyperparameters of a live run (validated)',
    flags: CONFIG_FLAGS,
  },
  runs: {
    run: runsCommand,
    summary: 'list training runs (runs list), or show one (runs show NAME)',
    subcommands: ['list', 'show'],
    flags: ['--json', ...CONFIG_FLAGS],
  },
  rollouts: {
    run: rolloutsCommand,
    summary: 'list the dialogues of a run that wait for an operator (rollouts list NAME --waiting)',
    subcommands: ['list'],
    flags: ['--waiting', '--json', ...CONFIG_FLAGS],
  },
  schedule: {
    run: scheduleCommand,
    summary: 'nightly evaluations as Temporal Schedules: create|list|pause|unpause|delete|trigger',
    subcommands: ['create', 'list', 'pause', 'unpause', 'delete', 'trigger'],
    flags: [
      '--cron',
      '--run',
      '--policy',
      '--split',
      '--scenarios',
      '--catchup-window',
      '--note',
      '--json',
      ...CONFIG_FLAGS,
    ],
  },
  eval: {
    run: evalCommand,
    summary: 'run the Sentient benchmark (SAGE protocol); eval compare A B',
    subcommands: ['compare'],
    flags: ['--policy', '--split', '--scenarios', '--only', '--name', '--repeats', '--json', ...CONFIG_FLAGS],
  },
  'codec-server': {
    run: codecServerCommand,
    summary: 'decrypt payloads for the Temporal UI and CLI (codec server)',
    flags: ['--host', '--port', '--cors-origin', ...CONFIG_FLAGS],
  },
  completion: {
    run: (argv) => completionCommand(argv, completionEntries()),
    summary: 'print a shell completion script: attune completion bash|zsh',
    subcommands: SHELLS,
    flags: [],
  },
  evals: {
    run: evalsCommand,
    summary: 'list evaluations with their scores (evals list)',
    subcommands: ['list'],
    flags: ['--json', '--run', ...CONFIG_FLAGS],
  },
  export: {
    run: exportCommand,
    summary: 'write a run step as a Hugging Face model directory (NAME@STEP --out DIR)',
    flags: ['--out', '--merge-lora', '--state-dir', '--json', ...CONFIG_FLAGS],
  },
};

/** The command table as shell completion sees it. */
export function completionEntries(): CompletionEntry[] {
  return Object.entries(COMMANDS).map(([name, c]) => ({ name, subcommands: c.subcommands ?? [], flags: c.flags }));
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
    if (error instanceof RunEndedError) {
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
