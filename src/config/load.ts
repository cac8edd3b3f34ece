import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml, parseDocument } from 'yaml';
import { z } from 'zod';
import { describeIssues } from '../core/scenario.js';
import { DEPRECATED_KEYS_IN_ORDER, deprecationWarning, renamedKey, renamedSetKey } from './deprecatedKeys.js';
import { fitToEmbeddedModel } from './embeddedModelFit.js';
import { LOCAL_LLM_TOKEN_ENV } from './localLlmEndpoint.js';
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
  // `name=url,name=url`: the vLLM replicas with a publisher beside each (policy.replicas).
  POLICY_REPLICAS: 'policy.replicas',
  SIMULATOR_BASE_URL: 'simulator.baseURL',
  SIMULATOR_MODEL: 'simulator.model',
  TEMPORAL_ADDRESS: 'temporal.address',
  TEMPORAL_NAMESPACE: 'temporal.namespace',
  // The Temporal CLI's names for the same files.
  TEMPORAL_TLS_CA: 'temporal.tls.caFile',
  TEMPORAL_TLS_CERT: 'temporal.tls.certFile',
  TEMPORAL_TLS_KEY: 'temporal.tls.keyFile',
  TEMPORAL_TLS_SERVER_NAME: 'temporal.tls.serverName',
  TEMPORAL_API_KEY_ENV: 'temporal.apiKeyEnv',
  ATTUNE_HOME: 'home',
  TRAINER_URL: 'trainer.url',
  ATTUNE_METRICS_ADDRESS: 'metrics.prometheus',
  // The trackers' own variables.
  MLFLOW_TRACKING_URI: 'tracking.mlflow.trackingUri',
  WANDB_PROJECT: 'tracking.wandb.project',
  WANDB_MODE: 'tracking.wandb.mode',
  // The object store (its credentials are read by name where the store is opened).
  ATTUNE_ARTIFACTS_URL: 'artifacts.url',
  ATTUNE_ARTIFACTS_ENDPOINT: 'artifacts.endpoint',
  AWS_REGION: 'artifacts.region',
};

type Tree = Record<string, unknown>;

/**
 * Plain YAML only: `!!set`, `!!omap`, `!!pairs` and `!!binary` would become a Set, Map or bytes, and
 * a zod object takes a Set or Map as an empty mapping, silently dropping what was written. Unresolved,
 * they stay the mapping, list or string they are written as, and are checked like any other value
 * (so the parser's warning about the tag is not printed).
 */
const YAML_OPTIONS = { resolveKnownTags: false, logLevel: 'error' } as const;

function setPath(tree: Tree, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let node: Tree = tree;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    // `tls: true` (on, with defaults) takes keys such as TEMPORAL_TLS_CA as a section would.
    if (next === undefined || next === null || next === true) node[key] = {};
    else if (typeof next !== 'object' || Array.isArray(next))
      throw new ConfigError(`cannot set ${dotted}: ${key} is not a section`);
    node = node[key] as Tree;
  }
  node[keys[keys.length - 1] as string] = value;
}

/** The value at a dotted path, or undefined; `remove` takes it out of its section. */
function takePath(tree: Tree, dotted: string, remove: boolean): unknown {
  const keys = dotted.split('.');
  let node: unknown = tree;
  for (const key of keys.slice(0, -1)) {
    node = isMapping(node) && Object.hasOwn(node, key) ? node[key] : undefined;
  }
  const last = keys[keys.length - 1] as string;
  if (!isMapping(node) || !Object.hasOwn(node, last)) return undefined;
  const value = node[last];
  if (remove) delete node[last];
  return value;
}

/** Whether a source wrote a value at a dotted path; a number after a list indexes it. */
function written(tree: Tree, dotted: string): boolean {
  let node: unknown = tree;
  for (const key of dotted.split('.')) {
    if (Array.isArray(node)) node = /^\d+$/.test(key) ? node[Number(key)] : undefined;
    else node = isMapping(node) && Object.hasOwn(node, key) ? node[key] : undefined;
  }
  return node !== undefined;
}

/**
 * Moves the old keys of one source (a file) to the keys they became, adding each old key found to
 * `found`. A source that sets both an old key and its new one is an error: which one it meant is unclear.
 */
function moveDeprecatedKeys(tree: Tree, where: string, found: Set<string>): void {
  for (const { from, to } of DEPRECATED_KEYS_IN_ORDER) {
    const value = takePath(tree, from, false);
    if (value === undefined || renamedKey(from, value) === null) continue;
    takePath(tree, from, true);
    if (takePath(tree, to, false) !== undefined)
      throw new ConfigError(`${where}: ${from} and ${to} are both set: keep ${to}`);
    setPath(tree, to, value);
    found.add(from);
  }
}

/** Deprecation warnings already written by the default sink: a command that loads twice warns once. */
const warnedOnStderr = new Set<string>();

function warnOnStderr(message: string): void {
  if (warnedOnStderr.has(message)) return;
  warnedOnStderr.add(message);
  process.stderr.write(`attune: warning: ${message}\n`);
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
    value = raw === '' ? '' : parseYaml(raw, YAML_OPTIONS);
  } catch {
    value = raw;
  }
  return [key, value];
}

export interface LoadConfigOptions {
  file?: string;
  set?: string[];
  env?: NodeJS.ProcessEnv;
  /** Where deprecation warnings go, one per old key used; default: stderr, once per process. */
  onWarning?: (message: string) => void;
}

/** Reads a YAML file into a plain tree, naming the file on any syntax error. */
export function readYamlFile(file: string): Tree {
  if (!existsSync(file)) throw new ConfigError(`${file}: no such config file`);
  const doc = parseDocument(readFileSync(file, 'utf8'), YAML_OPTIONS);
  if (doc.errors.length > 0) {
    const first = doc.errors[0];
    throw new ConfigError(`${file}: YAML syntax error: ${first?.message ?? 'unknown'}`);
  }
  let value: unknown;
  try {
    value = doc.toJS();
  } catch (error) {
    // An alias without its anchor, or aliases that expand past the parser's limit.
    throw new ConfigError(`${file}: YAML error: ${(error as Error).message}`);
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ConfigError(`${file}: the top level must be a mapping`);
  return value as Tree;
}

/** The key by which a config file names the file it builds on. */
export const EXTENDS_KEY = 'extends';

function isMapping(value: unknown): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `over` on top of `base`: mappings merge key by key; anything else (lists, null) replaces. Keys are
 * own data properties, so a `__proto__` key stays a key (and is rejected as unknown) instead of
 * becoming the tree's prototype.
 */
function mergeTrees(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const below = Object.hasOwn(out, key) ? out[key] : undefined;
    const merged = isMapping(value) && isMapping(below) ? mergeTrees(below, value) : value;
    Object.defineProperty(out, key, { value: merged, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** Records `file` as the origin of every key of `tree` (dotted paths; lists count as one value). */
function noteOrigins(tree: Tree, file: string, origins: Map<string, string>, prefix = ''): void {
  for (const [key, value] of Object.entries(tree)) {
    const path = `${prefix}${key}`;
    origins.set(path, file);
    if (isMapping(value)) noteOrigins(value, file, origins, `${path}.`);
  }
}

interface ConfigFileTree {
  tree: Tree;
  /** Dotted key -> the file that set it, for error messages about keys from a base file. */
  origins: Map<string, string>;
}

/** The files an `extends` value names: one file, or a list merged in order (a later file over an earlier one). */
function extendedFiles(file: string, ref: unknown): string[] {
  if (ref === undefined) return [];
  const refs = Array.isArray(ref) ? (ref as unknown[]) : [ref];
  if (refs.length === 0 || refs.some((r) => typeof r !== 'string' || r === ''))
    throw new ConfigError(`${file}: ${EXTENDS_KEY} must be the name of a config file, or a list of them`);
  return refs as string[];
}

/**
 * Reads a config file and, through `extends: FILE` or `extends: [FILE, ...]` (relative to the file), the
 * files it builds on, merged base first and in the order listed. A missing base file or a cycle is an
 * error naming the file that refers to it.
 */
export function readConfigFile(
  file: string,
  chain: readonly string[] = [],
  deprecated: Set<string> = new Set(),
): ConfigFileTree {
  const { [EXTENDS_KEY]: ref, ...rest } = readYamlFile(file);
  moveDeprecatedKeys(rest, file, deprecated);
  let base: ConfigFileTree = { tree: {}, origins: new Map() };
  const seen = [...chain, file];
  for (const name of extendedFiles(file, ref)) {
    const baseFile = isAbsolute(name) ? name : join(dirname(file), name);
    if (seen.some((f) => resolve(f) === resolve(baseFile)))
      throw new ConfigError(`${file}: ${EXTENDS_KEY} ${name}: a cycle (${[...seen, baseFile].join(' -> ')})`);
    if (!existsSync(baseFile))
      throw new ConfigError(`${file}: ${EXTENDS_KEY} ${name}: no such config file ${baseFile}`);
    const next = readConfigFile(baseFile, seen, deprecated);
    base = { tree: mergeTrees(base.tree, next.tree), origins: new Map([...base.origins, ...next.origins]) };
  }
  noteOrigins(rest, file, base.origins);
  return { tree: mergeTrees(base.tree, rest), origins: base.origins };
}

/** Origin of keys set by an environment variable or --set. */
const NOT_A_FILE = '';

/** The file a key came from when it is a base file (not `file` itself, the environment or --set), else null. */
function baseFileOf(path: readonly PropertyKey[], file: string, origins: Map<string, string>): string | null {
  for (let n = path.length; n > 0; n--) {
    const origin = origins.get(path.slice(0, n).join('.'));
    if (origin !== undefined) return origin === file || origin === NOT_A_FILE ? null : origin;
  }
  return null;
}

function describeConfigIssues(error: z.ZodError, file: string | undefined, origins: Map<string, string>): string[] {
  const lines = describeIssues(error);
  if (file === undefined) return lines;
  return error.issues.map((issue, i) => {
    const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0] ?? ''] : issue.path;
    const from = baseFileOf(path, file, origins);
    return from ? `${lines[i]} (in ${from})` : (lines[i] as string);
  });
}

/**
 * Defaults <- YAML file (after the files it extends) <- environment variables <- --set options;
 * then one zod validation naming file and key.
 */
export function loadConfig(options: LoadConfigOptions = {}): AttuneConfig {
  const env = options.env ?? process.env;
  const deprecated = new Set<string>();
  const { tree, origins } = options.file
    ? readConfigFile(options.file, [], deprecated)
    : { tree: {}, origins: new Map<string, string>() };
  for (const [variable, key] of Object.entries(ENV_OVERRIDES)) {
    const value = env[variable];
    if (value !== undefined && value !== '') {
      setPath(tree, key, value);
      origins.set(key, NOT_A_FILE);
    }
  }
  const localLlm = tree.localLlm as Tree | undefined;
  if ((env[LOCAL_LLM_TOKEN_ENV] ?? '') !== '' && localLlm?.tokenEnv === undefined)
    setPath(tree, 'localLlm.tokenEnv', LOCAL_LLM_TOKEN_ENV);
  for (const option of options.set ?? []) {
    const [written, value] = parseSetOption(option);
    const renamed = renamedSetKey(written, value);
    const key = renamed?.key ?? written;
    if (renamed !== null) deprecated.add(renamed.from);
    setPath(tree, key, value);
    origins.set(key, NOT_A_FILE);
  }
  for (const key of deprecated) (options.onWarning ?? warnOnStderr)(deprecationWarning(key));
  const result = configSchema.safeParse(tree);
  if (!result.success) {
    const where = options.file ?? 'configuration';
    throw new ConfigError(
      `${where}: invalid configuration\n${describeConfigIssues(result.error, options.file, origins)
        .map((l) => `  - ${l}`)
        .join('\n')}`,
    );
  }
  return fitToEmbeddedModel(result.data, (key) => written(tree, key));
}

export function configErrorFrom(error: unknown): string {
  if (error instanceof ConfigError) return error.message;
  if (error instanceof z.ZodError) return describeIssues(error).join('\n');
  return error instanceof Error ? error.message : String(error);
}
