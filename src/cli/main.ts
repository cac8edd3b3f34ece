import { configErrorFrom, ConfigError } from '../config/load.js';
import { RunEndedError } from '../client/trainingRuns.js';
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
import { scenariosCommand } from './commands/scenarios.js';
import { workerCommand } from './commands/worker.js';

type Command = (argv: string[]) => Promise<number>;

const COMMANDS: Record<string, { run: Command; summary: string }> = {
  dev: { run: devCommand, summary: 'start the dev server (UI on :8233), local models and workers' },
  worker: { run: workerCommand, summary: 'run the LLM-I/O workers against a Temporal server' },
  rollout: { run: rolloutCommand, summary: 'run one dialogue and print its transcript' },
  scenarios: { run: scenariosCommand, summary: 'validate, list and import scenarios' },
  report: { run: reportCommand, summary: 'write an HTML report (and PNG charts) of a run or an evaluation' },
  demo: {
    run: demoCommand,
    summary: 'the embedded default: train, evaluate and report on local models (npm run demo)',
  },
  train: { run: trainCommand, summary: 'start (or attach to) an RLVER training run and follow it' },
  runs: { run: runsCommand, summary: 'list training runs (runs list), or show one (runs show NAME)' },
  status: { run: runControlCommand('status'), summary: 'step, phase, rollouts, last metrics and ETA of a run' },
  pause: { run: runControlCommand('pause'), summary: 'pause a run (in-flight rollouts finish)' },
  resume: { run: runControlCommand('resume'), summary: 'resume a paused or blocked run' },
  stop: { run: runControlCommand('stop'), summary: 'stop a run after its current step' },
  set: { run: runControlCommand('set'), summary: 'change hyperparameters of a live run (validated)' },
  schedule: {
    run: scheduleCommand,
    summary: 'nightly evaluations as Temporal Schedules: create|list|pause|unpause|delete|trigger',
  },
  eval: { run: evalCommand, summary: 'run the Sentient benchmark (SAGE protocol); eval compare A B' },
  evals: { run: evalsCommand, summary: 'list evaluations with their scores (evals list)' },
  export: { run: exportCommand, summary: 'write a run step as a Hugging Face model directory (NAME@STEP --out DIR)' },
  'codec-server': { run: codecServerCommand, summary: 'decrypt payloads for the Temporal UI and CLI (codec server)' },
};

export function topHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return [
    'attune: RLVER training of empathetic dialogue models as durable Temporal workflows',
    '',
    'Usage: attune <command> [options]      (attune <command> --help for details)',
    '',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    'Environment: POLICY_BASE_URL POLICY_MODEL POLICY_API_KEY SIMULATOR_BASE_URL SIMULATOR_MODEL',
    '             SIMULATOR_API_KEY TEMPORAL_ADDRESS TEMPORAL_NAMESPACE ATTUNE_HOME TRAINER_TOKEN',
    '             TEMPORAL_TLS_CA TEMPORAL_TLS_CERT TEMPORAL_TLS_KEY TEMPORAL_TLS_SERVER_NAME TEMPORAL_API_KEY_ENV',
    '             ATTUNE_CODEC_KEYS_FILE ATTUNE_CODEC_SERVER_TOKEN (payload encryption: see SECURITY.md)',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
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
      process.stderr.write(`attune ${name}: ${error.message}\n`);
      return 2;
    }
    if (error instanceof RunEndedError) {
      process.stderr.write(`attune ${name}: ${error.message}\n`);
      return 1;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`attune ${name}: ${configErrorFrom(error)}\n`);
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
  return parts.filter((p, i) => p && parts.indexOf(p) === i).join('\n  caused by: ');
}
