import { flagHelp, HELP_FLAG, parseCommand, UsageError } from '../args.js';
import { completionScript, SHELLS, type CompletionEntry, type Shell } from '../completion.js';

export const COMPLETION_FLAGS = HELP_FLAG;

export const COMPLETION_HELP = `attune completion bash|zsh

Prints a completion script for the shell: commands, their subcommands and flags.

  bash:  source <(npx attune completion bash)        (or save it under ~/.local/share/bash-completion/completions/attune)
  zsh:   source <(npx attune completion zsh)         (after compinit)

${flagHelp(COMPLETION_FLAGS)}`;

export async function completionCommand(argv: string[], commands: readonly CompletionEntry[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, COMPLETION_FLAGS);
  const [shell, ...rest] = positionals;
  if (values.help || shell === undefined) {
    process.stdout.write(`${COMPLETION_HELP}\n`);
    return values.help ? 0 : 2;
  }
  if (!SHELLS.includes(shell as Shell)) throw new UsageError(`unknown shell "${shell}": one of ${SHELLS.join(', ')}`);
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  process.stdout.write(completionScript(shell as Shell, commands));
  return 0;
}
