import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isValidName, NAME_RULE } from '../../core/names.js';
import { REPO_ROOT } from '../../paths.js';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext } from '../context.js';
import { exportOverHttp } from '../remoteExport.js';

export const EXPORT_FLAGS = {
  out: { type: 'string', short: 'o', value: 'DIR', help: 'the directory to write (must not exist, or be empty)' },
  'merge-lora': { type: 'boolean', help: 'LoRA runs: merge the adapter into the base weights' },
  'state-dir': {
    type: 'string',
    value: 'DIR',
    help: "the trainer's state directory (default <home>/trainer, as the local trainer's)",
  },
  'trainer-url': {
    type: 'string',
    value: 'URL',
    help: [
      "a trainer on another host: fetch the LoRA adapter (or a full fine-tuning run's weights) over its",
      'adapter (or weights) route with $TRAINER_TOKEN',
      "(trainer.tokenEnv), checking the trainer's digest. Default when there is no local state",
      "directory (no --state-dir, no <home>/trainer): the config's trainer.url",
    ].join('\n'),
  },
  json: { type: 'boolean', help: 'print {run_id, step, format, path} (and digest over HTTP)' },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const EXPORT_HELP = `attune export NAME@STEP --out DIR [--merge-lora] [--state-dir DIR] [--json]

Writes the trainer's checkpoint of step STEP of run NAME as a Hugging Face model directory:
safetensors weights, config, and the run's tokenizer with its chat template, which
transformers.AutoModelForCausalLM / AutoTokenizer.from_pretrained(DIR) load. A full fine-tuning run
gives full weights (step 0 is the base model); a LoRA run gives its adapter, loadable by peft and by
vLLM (--enable-lora), unless --merge-lora merges it into full weights. Runs the trainer's
\`python -m attune_trainer export\` on this machine's trainer state. A running trainer may keep
serving while it reads. For a trainer on another host (--trainer-url), the LoRA adapter's files, or
a full fine-tuning run's model directory, come over HTTP, checked against the trainer's digest: the
checkpoint's own files (--merge-lora: run the export on the trainer's host).

${flagHelp(EXPORT_FLAGS)}`;

/** `run@12` -> run and step; the name follows the one naming rule, the step is a whole number. */
export function parseVersion(version: string): { run: string; step: number } {
  const at = version.lastIndexOf('@');
  const run = at > 0 ? version.slice(0, at) : '';
  const step = version.slice(at + 1);
  if (at <= 0 || !/^\d+$/.test(step))
    throw new UsageError(`"${version}": expected NAME@STEP, e.g. tiny-1@3 (STEP a whole number; 0 = the base)`);
  if (!isValidName(run)) throw new UsageError(`run name "${run}" is not a valid name (${NAME_RULE})`);
  return { run, step: Number(step) };
}

function runPython(python: string, args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((done, fail) => {
    const child = spawn(python, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.once('error', fail);
    child.once('close', (code) => done({ code: code ?? 1, stdout }));
  });
}

export async function exportCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, EXPORT_FLAGS);
  if (values.help) {
    process.stdout.write(`${EXPORT_HELP}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`one NAME@STEP is required\n\n${EXPORT_HELP}`);
  if (!values.out) throw new UsageError('--out DIR is required');
  const { run, step } = parseVersion(positionals[0]!);
  const { config } = commandContext(values, 'export');
  const localState = values['state-dir'] ?? join(config.home, 'trainer');
  const trainerUrl =
    values['trainer-url'] ?? (values['state-dir'] || existsSync(localState) ? undefined : config.trainer.url);
  if (trainerUrl !== undefined) {
    if (values['merge-lora'])
      throw new UsageError("--merge-lora merges on the trainer's host: run the export there, without --trainer-url");
    const summary = await exportOverHttp({ url: trainerUrl, tokenEnv: config.trainer.tokenEnv }, run, step, values.out);
    process.stdout.write(
      values.json
        ? `${JSON.stringify(summary)}\n`
        : `${run}@${step} (${summary.format}, digest ${summary.digest}) fetched from ${trainerUrl} to ${summary.path}\n`,
    );
    return 0;
  }
  const python = join(REPO_ROOT, '.venv', 'bin', 'python');
  if (!existsSync(python))
    throw new Error('the trainer is not installed: run `npm run setup` (or bash trainer/install.sh)');
  const stateDir = resolve(localState);
  const args = ['-m', 'attune_trainer', 'export', '--state-dir', stateDir, '--run', run, '--step', String(step)];
  args.push('--out', resolve(values.out), ...(values['merge-lora'] ? ['--merge-lora'] : []));
  // The trainer's own errors (unknown run or step, a non-empty --out) are on stderr already.
  const { code, stdout } = await runPython(python, args);
  if (code !== 0) return code === 2 ? 1 : code;
  const summary = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { format: string; path: string };
  process.stdout.write(
    values.json ? `${JSON.stringify(summary)}\n` : `${run}@${step} (${summary.format}) exported to ${summary.path}\n`,
  );
  return 0;
}
