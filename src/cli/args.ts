import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * One flag, declared once: how node:util parseArgs reads it, and its line in the command's --help.
 * Shell completion (src/cli/main.ts) offers the flags of the same tables.
 */
export interface Flag {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** The value's name in help (`--port N`); string flags only. */
  value?: string;
  /** What it does; each '\n' starts another help line, aligned under the first. */
  help: string;
}

/** A command's (or subcommand's) flags: the one table its parser, its --help and completion read. */
export type Flags = Readonly<Record<string, Flag>>;

/** Flags every command that reads configuration accepts. */
export const CONFIG_FLAGS = {
  config: { type: 'string', short: 'c', value: 'FILE', help: 'YAML config file (see configs/)' },
  set: {
    type: 'string',
    multiple: true,
    value: 'KEY=VALUE',
    help: 'override a config key, e.g. --set policy.model=my-model (repeatable)',
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
} as const satisfies Flags;

/** Just --help, for commands that read no configuration. */
export const HELP_FLAG = { help: CONFIG_FLAGS.help } as const satisfies Flags;

/** Where a description starts (as in every --help so far); a longer flag pushes only its own line right. */
const HELP_COLUMN = 24;

/** The options block of a command's --help, one flag (and its continuation lines) after another. */
export function flagHelp(flags: Flags): string {
  return Object.entries(flags)
    .map(([name, flag]) => {
      const head = `  ${flag.short ? `-${flag.short},` : '   '} --${name}${flag.value ? ` ${flag.value}` : ''}`;
      const [first, ...more] = flag.help.split('\n');
      return [
        `${head.padEnd(Math.max(HELP_COLUMN, head.length + 2))}${first}`,
        ...more.map((l) => ' '.repeat(HELP_COLUMN) + l),
      ]
        .map((l) => l.trimEnd())
        .join('\n');
    })
    .join('\n');
}

/** A flag table as parseArgs takes it: its help text left out. */
function parserOptions(flags: Flags): NonNullable<ParseArgsConfig['options']> {
  return Object.fromEntries(
    Object.entries(flags).map(([name, { type, short, multiple }]) => [
      name,
      { type, ...(short !== undefined ? { short } : {}), ...(multiple ? { multiple } : {}) },
    ]),
  );
}

export function parseCommand<F extends Flags>(argv: string[], flags: F, allowPositionals = true) {
  try {
    return parseArgs<{ args: string[]; options: F; allowPositionals: boolean; strict: true }>({
      args: argv,
      options: parserOptions(flags) as F,
      allowPositionals,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

export function intOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw new UsageError(`--${name} must be an integer, got "${value}"`);
  return Number(value);
}
