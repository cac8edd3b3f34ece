/** What shell completion knows of one command: its subcommands (first word after it) and its flags. */
export interface CompletionEntry {
  name: string;
  subcommands: readonly string[];
  flags: readonly string[];
}

export const SHELLS = ['bash', 'zsh'] as const;
export type Shell = (typeof SHELLS)[number];

const GLOBAL_FLAGS = ['--log-format', '--help'];
const FLAG_VALUES: Record<string, readonly string[]> = { '--log-format': ['human', 'json'] };

/** A word list for the script; --help is both a command's flag and a global one, offered once. */
function words(list: readonly string[]): string {
  return [...new Set(list)].join(' ');
}

/** A bash completion function for `attune` (and `npx attune`): commands, then the command's subcommands and flags. */
export function bashCompletion(commands: readonly CompletionEntry[]): string {
  const cases = commands.map(
    (c) => `    ${c.name}) words="${words([...c.subcommands, ...c.flags, ...GLOBAL_FLAGS])}" ;;`,
  );
  const values = Object.entries(FLAG_VALUES).map(
    ([flag, v]) => `    ${flag}) COMPREPLY=($(compgen -W "${words(v)}" -- "$cur")); return ;;`,
  );
  return `# attune completion for bash: source <(npx attune completion bash)
_attune() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" i=1 words
  # npx attune: the command is the word after "attune".
  while [ $i -lt $COMP_CWORD ] && [ "\${COMP_WORDS[i-1]}" != attune ]; do i=$((i + 1)); done
  case "$prev" in
${values.join('\n')}
  esac
  if [ $COMP_CWORD -le $i ]; then
    COMPREPLY=($(compgen -W "${words([...commands.map((c) => c.name), ...GLOBAL_FLAGS])}" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[i]}" in
${cases.join('\n')}
    *) words="${words(GLOBAL_FLAGS)}" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _attune attune
`;
}

function zshQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** A zsh completion function for `attune`, the same words as bash. */
export function zshCompletion(commands: readonly CompletionEntry[]): string {
  const cases = commands.map(
    (c) =>
      `    ${c.name}) compadd -- ${[...new Set([...c.subcommands, ...c.flags, ...GLOBAL_FLAGS])].map(zshQuote).join(' ')} ;;`,
  );
  return `#compdef attune
# attune completion for zsh: source <(npx attune completion zsh)
_attune() {
  if [[ \${words[CURRENT-1]} == --log-format ]]; then
    compadd -- ${FLAG_VALUES['--log-format']!.map(zshQuote).join(' ')}
    return
  fi
  if (( CURRENT == 2 )); then
    compadd -- ${[...commands.map((c) => c.name), ...GLOBAL_FLAGS].map(zshQuote).join(' ')}
    return
  fi
  case \${words[2]} in
${cases.join('\n')}
    *) compadd -- ${GLOBAL_FLAGS.map(zshQuote).join(' ')} ;;
  esac
}
if (( $+functions[compdef] )); then compdef _attune attune; fi
`;
}

export function completionScript(shell: Shell, commands: readonly CompletionEntry[]): string {
  return shell === 'bash' ? bashCompletion(commands) : zshCompletion(commands);
}
