/**
 * Renders docs/configuration-reference.md from the config's zod declarations (src/config/schema.ts
 * and the schemas it composes), through zod's own JSON Schema: every key, its type, default,
 * environment variable and help text (`.describe()` on the declaration). Run by
 * scripts/generate-config-reference.ts (`npm run generate:config-docs`); a test keeps the file equal.
 */
import { join } from 'node:path';
import * as prettier from 'prettier';
import { z } from 'zod';
import { ENV_OVERRIDES } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';

export const REFERENCE_FILE = 'docs/configuration-reference.md';

/** The part of JSON Schema that zod writes for the config. */
interface Node {
  type?: string | string[];
  properties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  anyOf?: Node[];
  oneOf?: Node[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  description?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
}

interface Row {
  key: string;
  type: string;
  default: string;
  env: string;
  help: string;
}

const code = (text: string) => `\`${text}\``;
const cell = (text: string) => text.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
const branches = (node: Node) => node.anyOf ?? node.oneOf ?? [];
const isObject = (node: Node) => node.properties !== undefined;

function numberType(node: Node, name: string): string {
  const low =
    node.exclusiveMinimum !== undefined
      ? `> ${node.exclusiveMinimum}`
      : node.minimum !== undefined && node.minimum > Number.MIN_SAFE_INTEGER
        ? `≥ ${node.minimum}`
        : '';
  const high =
    node.exclusiveMaximum !== undefined
      ? `< ${node.exclusiveMaximum}`
      : node.maximum !== undefined && node.maximum < Number.MAX_SAFE_INTEGER
        ? `≤ ${node.maximum}`
        : '';
  return [name, low, high].filter(Boolean).join(', ');
}

function typeOf(node: Node): string {
  if (node.enum) return node.enum.map((value) => code(String(value))).join(' or ');
  if (node.const !== undefined) return code(String(node.const));
  if (branches(node).length > 0) return [...new Set(branches(node).map(typeOf))].join(' or ');
  if (Array.isArray(node.type)) return node.type.join(' or ');
  switch (node.type) {
    case 'integer':
      return numberType(node, 'integer');
    case 'number':
      return numberType(node, 'number');
    case 'string':
      return node.format === 'uri' ? 'URL' : 'string';
    case 'array': {
      const item = node.items === undefined ? 'value' : isObject(node.items) ? 'object' : typeOf(node.items);
      return `list of ${item === 'object' ? 'objects' : item}`;
    }
    case 'object':
      return 'object';
    default:
      return node.type ?? 'any';
  }
}

function defaultOf(node: Node, required: boolean): string {
  if (node.default === undefined) return required ? 'required' : '';
  if (isObject(node) && JSON.stringify(node.default) === '{}') return '';
  return code(typeof node.default === 'string' ? node.default || '""' : JSON.stringify(node.default));
}

/** The environment variables that set a key, from the loader's one table of them. */
function envOf(key: string): string {
  return Object.entries(ENV_OVERRIDES)
    .filter(([, target]) => target === key)
    .map(([variable]) => code(variable))
    .join(', ');
}

/** Rows for every key under `node`: a row per leaf, and one per described object, then its keys. */
function rowsOf(node: Node, prefix: string): Row[] {
  const required = new Set(node.required ?? []);
  return Object.entries(node.properties ?? {}).flatMap(([name, child]) => {
    const key = prefix ? `${prefix}.${name}` : name;
    const row: Row = {
      key,
      type: typeOf(child),
      default: defaultOf(child, required.has(name)),
      env: envOf(key),
      help: child.description ?? '',
    };
    const nested = [
      ...(isObject(child) ? [child] : branches(child).filter(isObject)),
      ...(child.items && isObject(child.items) ? [child.items] : []),
    ];
    const below = nested.flatMap((inner) => rowsOf(inner, inner === child.items ? `${key}[]` : key));
    const plainSection = isObject(child) && row.help === '' && row.default === '';
    return plainSection ? below : [row, ...below];
  });
}

function table(rows: Row[]): string {
  const lines = rows.map(
    (row) => `| ${[code(row.key), row.type, row.default, row.env, row.help].map(cell).join(' | ')} |`,
  );
  return ['| key | type | default | environment | what |', '| --- | --- | --- | --- | --- |', ...lines].join('\n');
}

/** The reference as Markdown, formatted as the repository's Prettier config formats it. */
export async function renderConfigReference(root: string): Promise<string> {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any', reused: 'inline' }) as Node;
  const sections = Object.entries(schema.properties ?? {}).map(([name, node]) => {
    const rows = isObject(node) ? rowsOf(node, name) : rowsOf({ properties: { [name]: node } }, '');
    const intro = isObject(node) && node.description ? `${node.description}\n\n` : '';
    return `## \`${name}\`\n\n${intro}${table(rows)}\n`;
  });
  const text = [
    '# Configuration reference',
    '',
    '<!-- Generated from the zod declarations by `npm run generate:config-docs`: do not edit. -->',
    '',
    'Every key of an Attune config file (`--config FILE`, which may `extends:` another, or a list of others merged in order), also settable with',
    '`--set key=value` or, where a variable is named, from the environment. Generated from the declarations',
    "(`src/config/schema.ts` and the schemas it composes; the trainer settings from the trainer's own models",
    "through `npm run generate:settings`): a help text is written once, on its key's declaration, and",
    '`test/contracts/configReference.test.ts` fails when this file differs from what the generator makes of',
    'them. Unknown keys are rejected with the file and key named; rules across keys are in',
    '`src/config/crossFieldChecks.ts`.',
    '',
    ...sections,
  ].join('\n');
  const options = await prettier.resolveConfig(join(root, REFERENCE_FILE));
  return prettier.format(text, { ...options, parser: 'markdown' });
}
