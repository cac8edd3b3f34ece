import { readFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';

/**
 * Compose files merged the way Docker Compose v2 merges `-f a.yml -f b.yml`, for Debian's
 * docker-compose 1.29, which rejects the top-level `name:` and Compose's `!reset` / `!override`
 * tags: the stack test hands it one effective file instead.
 *
 * Mappings merge key by key; `!reset` removes a key, `!override` replaces a value whole. A plain
 * sequence replaces the one before only where Compose replaces it too (commands, entrypoints, a
 * health check's test); anywhere else an override must say `!override` or `!reset`, so this merge
 * never silently differs from Compose's (which appends ports, volumes and the like).
 */

type Yaml = null | boolean | number | string | Yaml[] | { [key: string]: Yaml };

const RESET = Symbol('compose !reset');
const OVERRIDE = Symbol('compose !override');
type Tagged = { [RESET]?: true; [OVERRIDE]?: Yaml };

const REPLACED_SEQUENCES = new Set(['command', 'entrypoint', 'test']);

const tags = [
  { tag: '!reset', resolve: (): Tagged => ({ [RESET]: true }) },
  { tag: '!reset', collection: 'seq' as const, resolve: (): Tagged => ({ [RESET]: true }) },
  { tag: '!reset', collection: 'map' as const, resolve: (): Tagged => ({ [RESET]: true }) },
  {
    tag: '!override',
    collection: 'seq' as const,
    resolve: (value: unknown): Tagged => ({ [OVERRIDE]: toJS(value) }),
  },
  {
    tag: '!override',
    collection: 'map' as const,
    resolve: (value: unknown): Tagged => ({ [OVERRIDE]: toJS(value) }),
  },
];

function toJS(node: unknown): Yaml {
  return (node as { toJSON(): Yaml }).toJSON();
}

function isMap(value: unknown): value is Record<string, Yaml> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A compose file as data, `<<` merge keys resolved, Compose's tags kept as markers. */
export function readComposeFile(path: string): Record<string, unknown> {
  const data: unknown = parse(readFileSync(path, 'utf8'), { merge: true, customTags: tags });
  if (!isMap(data)) throw new Error(`${path}: not a mapping at the top level`);
  return data;
}

function mergeValue(base: unknown, override: unknown, path: string): unknown {
  if (isMap(override) && OVERRIDE in override) return (override as Tagged)[OVERRIDE];
  if (Array.isArray(override)) {
    const key = path.split('.').at(-1)!;
    if (base === undefined || REPLACED_SEQUENCES.has(key)) return override;
    throw new Error(`${path}: Compose would merge this sequence; mark the override !override or !reset`);
  }
  if (isMap(override) && isMap(base)) return mergeMaps(base, override, path);
  return override;
}

function mergeMaps(base: Record<string, unknown>, override: Record<string, unknown>, path: string) {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const at = path ? `${path}.${key}` : key;
    if (isMap(value) && RESET in value) delete merged[key];
    else merged[key] = mergeValue(base[key], value, at);
  }
  return merged;
}

/** Drops the markers a file that nothing overrides may still hold (a `!reset` in the first file). */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (!isMap(value)) return value;
  if (OVERRIDE in value) return plain((value as Tagged)[OVERRIDE]);
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => !(isMap(v) && RESET in v))
      .map(([k, v]) => [k, plain(v)]),
  );
}

/** The files merged in order, as Compose v2 would see them. */
export function mergeComposeFiles(paths: string[]): Record<string, unknown> {
  let merged: Record<string, unknown> = {};
  for (const path of paths) merged = mergeMaps(merged, readComposeFile(path), '');
  return plain(merged) as Record<string, unknown>;
}

/**
 * The merged files as one file docker-compose 1.29 reads: without the top-level `name:` (the
 * project name goes on the command line instead) and without the `x-` anchors' sources, which the
 * merge has already copied where they are used.
 */
export function composeFileForV1(paths: string[]): string {
  const entries = Object.entries(mergeComposeFiles(paths)).filter(([key]) => key !== 'name' && !key.startsWith('x-'));
  return stringify(Object.fromEntries(entries), { aliasDuplicateObjects: false, lineWidth: 0 });
}
