import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** Options every command that reads configuration accepts. */
export const CONFIG_OPTIONS = {
  config: { type: 'string', short: 'c' },
  set: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionSpec;

export const CONFIG_HELP = `  -c, --config FILE     YAML config file (see configs/)
      --set KEY=VALUE   override a config key, e.g. --set policy.model=my-model (repeatable)
  -h, --help            show this help`;

export function parseCommand<O extends OptionSpec>(argv: string[], options: O, allowPositionals = true) {
  try {
    return parseArgs({ args: argv, options, allowPositionals, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

export function intOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw new UsageError(`--${name} must be an integer, got "${value}"`);
  return Number(value);
}
