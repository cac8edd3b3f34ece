import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml, parseDocument } from 'yaml';
import { z } from 'zod';
import { describeIssues } from '../core/scenario.js';
import { configSchema, type AttuneConfig } from './schema.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Environment variables that override config keys. API keys are not here: activities read them by name. */
export const ENV_OVERRIDES: Record<string, string> = {
  POLICY_BASE_URL: 'policy.baseURL',
  POLICY_MODEL: 'policy.model',
  SIMULATOR_BASE_URL: 'simulator.baseURL',
  SIMULATOR_MODEL: 'simulator.model',
  TEMPORAL_ADDRESS: 'temporal.address',
  TEMPORAL_NAMESPACE: 'temporal.namespace',
  ATTUNE_HOME: 'home',
  TRAINER_URL: 'trainer.url',
};

type Tree = Record<string, unknown>;

function setPath(tree: Tree, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let node: Tree = tree;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (next === undefined || next === null) node[key] = {};
    else if (typeof next !== 'object' || Array.isArray(next))
      throw new ConfigError(`cannot set ${dotted}: ${key} is not a section`);
    node = node[key] as Tree;
  }
  node[keys[keys.length - 1] as string] = value;
}

/** `key=value` with the value read as YAML, so numbers and booleans keep their types. */
export function parseSetOption(option: string): [string, unknown] {
  const eq = option.indexOf('=');
  if (eq <= 0) throw new ConfigError(`--set ${option}: expected key=value`);
  const key = option.slice(0, eq).trim();
  const raw = option.slice(eq + 1);
  if (!/^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$/.test(key))
    throw new ConfigError(`--set ${option}: bad key "${key}"`);
  let value: unknown;
  try {
    value = raw === '' ? '' : parseYaml(raw);
  } catch {
    value = raw;
  }
  return [key, value];
}

export interface LoadConfigOptions {
  file?: string;
  set?: string[];
  env?: NodeJS.ProcessEnv;
}

/** Reads a YAML file into a plain tree, naming the file on any syntax error. */
export function readYamlFile(file: string): Tree {
  if (!existsSync(file)) throw new ConfigError(`${file}: no such config file`);
  const doc = parseDocument(readFileSync(file, 'utf8'));
  if (doc.errors.length > 0) {
    const first = doc.errors[0];
    throw new ConfigError(`${file}: YAML syntax error: ${first?.message ?? 'unknown'}`);
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ConfigError(`${file}: the top level must be a mapping`);
  return value as Tree;
}

/** Defaults <- YAML file <- environment variables <- --set options; then one zod validation naming file and key. */
export function loadConfig(options: LoadConfigOptions = {}): AttuneConfig {
  const env = options.env ?? process.env;
  const tree: Tree = options.file ? readYamlFile(options.file) : {};
  for (const [variable, key] of Object.entries(ENV_OVERRIDES)) {
    const value = env[variable];
    if (value !== undefined && value !== '') setPath(tree, key, value);
  }
  for (const option of options.set ?? []) {
    const [key, value] = parseSetOption(option);
    setPath(tree, key, value);
  }
  const result = configSchema.safeParse(tree);
  if (!result.success) {
    const where = options.file ?? 'configuration';
    throw new ConfigError(
      `${where}: invalid configuration\n${describeIssues(result.error)
        .map((l) => `  - ${l}`)
        .join('\n')}`,
    );
  }
  return result.data;
}

export function configErrorFrom(error: unknown): string {
  if (error instanceof ConfigError) return error.message;
  if (error instanceof z.ZodError) return describeIssues(error).join('\n');
  return error instanceof Error ? error.message : String(error);
}
