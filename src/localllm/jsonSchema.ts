/**
 * Translate a standard JSON Schema (as OpenAI's `response_format.json_schema.schema` carries it)
 * into the subset node-llama-cpp 3.22 turns into a grammar, plus the integer ranges we add.
 *
 * Why a translation: node-llama-cpp silently degrades what it does not know (an `anyOf` becomes
 * `null`, integer bounds are ignored, `type: ["object","null"]` loses the object). We map what has
 * an exact equivalent, enforce integer bounds ourselves (see integerRange.ts), and for the rest
 * either reject (strict) or drop the keyword with a warning (non-strict, where OpenAI promises no
 * adherence either).
 */
import { MAX_SAFE } from './integerRange.js';

export class UnsupportedSchemaError extends Error {
  constructor(
    readonly path: string,
    readonly keyword: string,
    detail: string,
  ) {
    super(`response_format.json_schema.schema${path}: ${detail}`);
    this.name = 'UnsupportedSchemaError';
  }
}

/** An integer range the grammar builder must splice in where the placeholder literal stands. */
export interface IntegerRange {
  placeholder: string;
  lo: bigint;
  hi: bigint;
}

export interface TranslatedSchema {
  /** Schema in node-llama-cpp's GbnfJsonSchema dialect (typed loosely: it is built at run time). */
  schema: Record<string, unknown>;
  ranges: IntegerRange[];
  /** Keywords dropped in non-strict mode, for the log. */
  warnings: string[];
}

type Json = Record<string, unknown>;

/** Keywords that never constrain the value. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  '$schema',
  '$id',
  '$comment',
  '$anchor',
  'readOnly',
  'writeOnly',
  'deprecated',
  'contentMediaType',
  'contentEncoding',
  'required', // `required`: node-llama-cpp always emits every property, which satisfies any `required`.
  '$defs',
  'definitions',
  'nullable',
  'strict',
]);
const STRING_FORMATS = new Set(['date-time', 'date', 'time']);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);
const ANY_JSON: Json = {
  oneOf: [
    { type: ['string', 'number', 'boolean', 'null'] },
    { type: 'object', additionalProperties: true },
    { type: 'array' },
  ],
};

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isPrimitive = (value: unknown) => value === null || ['string', 'number', 'boolean'].includes(typeof value);
const pathOf = (base: string, key: string | number) =>
  typeof key === 'number'
    ? `${base}[${key}]`
    : /^[A-Za-z_$][\w$]*$/.test(key)
      ? `${base}.${key}`
      : `${base}[${JSON.stringify(key)}]`;

class Translator {
  readonly ranges: IntegerRange[] = [];
  readonly warnings: string[] = [];
  constructor(private readonly strict: boolean) {}

  /** Strict: the caller was promised adherence, so refuse. Otherwise keep going without the keyword. */
  private unsupported(path: string, keyword: string, detail: string): void {
    if (this.strict)
      throw new UnsupportedSchemaError(
        path,
        keyword,
        `${detail} (not enforceable by the local grammar; drop it or send strict: false)`,
      );
    this.warnings.push(`${path || '(root)'}: ignored "${keyword}": ${detail}`);
  }

  private malformed(path: string, keyword: string, detail: string): never {
    throw new UnsupportedSchemaError(path, keyword, detail);
  }

  translate(node: unknown, path: string): Json {
    if (node === true) return ANY_JSON;
    if (node === false) this.malformed(path, 'false', 'the schema `false` admits no value');
    if (!isObject(node)) this.malformed(path, 'type', 'a schema must be an object or a boolean');
    const keys = Object.keys(node).filter((k) => !ANNOTATIONS.has(k));

    if (typeof node.$ref === 'string') {
      for (const k of keys) if (k !== '$ref') this.unsupported(path, k, 'keywords beside "$ref" are not applied');
      const match = /^#\/(?:\$defs|definitions)\/([^/]+)$/.exec(node.$ref);
      if (!match)
        this.malformed(path, '$ref', `only local references "#/$defs/NAME" are supported, got "${node.$ref}"`);
      return { $ref: `#/$defs/${match[1]}` };
    }
    for (const combinator of ['anyOf', 'oneOf'] as const) {
      if (node[combinator] === undefined) continue;
      const branches = node[combinator];
      if (!Array.isArray(branches) || branches.length === 0)
        this.malformed(path, combinator, `"${combinator}" must be a non-empty array`);
      for (const k of keys)
        if (k !== combinator) this.unsupported(path, k, `keywords beside "${combinator}" are not applied`);
      return { oneOf: branches.map((b, i) => this.translate(b, pathOf(`${path}.${combinator}`, i))) };
    }
    if (node.allOf !== undefined) {
      if (Array.isArray(node.allOf) && node.allOf.length === 1 && keys.length === 1)
        return this.translate(node.allOf[0], `${path}.allOf[0]`);
      this.unsupported(path, 'allOf', '"allOf" is supported only as the single keyword with a single sub-schema');
    }
    for (const k of ['not', 'if', 'then', 'else', 'dependentSchemas', 'dependencies']) {
      if (node[k] !== undefined) this.unsupported(path, k, `"${k}" is not supported`);
    }
    if (node.const !== undefined) {
      if (!isPrimitive(node.const))
        this.malformed(path, 'const', 'only string, number, boolean or null constants are supported');
      return { const: node.const };
    }
    if (node.enum !== undefined) {
      if (!Array.isArray(node.enum) || node.enum.length === 0)
        this.malformed(path, 'enum', '"enum" must be a non-empty array');
      if (!node.enum.every(isPrimitive))
        this.malformed(path, 'enum', 'only string, number, boolean or null enum values are supported');
      return { enum: node.enum };
    }

    let types: string[];
    if (typeof node.type === 'string') types = [node.type];
    else if (Array.isArray(node.type) && node.type.length > 0 && node.type.every((t) => typeof t === 'string'))
      types = [...new Set(node.type as string[])];
    else if (node.type !== undefined)
      this.malformed(path, 'type', '"type" must be a string or a non-empty array of strings');
    else if (node.properties !== undefined || node.additionalProperties !== undefined) types = ['object'];
    else if (node.items !== undefined || node.prefixItems !== undefined) types = ['array'];
    else {
      for (const k of keys) if (k !== 'type') this.unsupported(path, k, 'keyword without a "type" is not applied');
      return ANY_JSON;
    }
    for (const t of types) if (!TYPES.has(t)) this.malformed(path, 'type', `unknown type "${t}"`);
    // OpenAPI-style `nullable: true`, which some generators emit.
    if (node.nullable === true && !types.includes('null')) types.push('null');
    if (types.length === 1) return this.typed(node, types[0]!, path);
    // One branch per type: node-llama-cpp's own type arrays drop "object" and "array".
    return { oneOf: types.map((t) => this.typed(node, t, path)) };
  }

  private typed(node: Json, type: string, path: string): Json {
    switch (type) {
      case 'string':
        return this.string(node, path);
      case 'integer':
        return this.integer(node, path);
      case 'number':
        return this.number(node, path);
      case 'object':
        return this.object(node, path);
      case 'array':
        return this.array(node, path);
      default:
        return { type };
    }
  }

  private string(node: Json, path: string): Json {
    if (node.pattern !== undefined) this.unsupported(path, 'pattern', '"pattern" is not supported');
    if (node.format !== undefined) {
      if (typeof node.format === 'string' && STRING_FORMATS.has(node.format)) {
        if (node.minLength !== undefined || node.maxLength !== undefined)
          this.unsupported(path, 'minLength', 'length bounds beside "format" are not applied');
        return { type: 'string', format: node.format };
      }
      this.unsupported(path, 'format', `format "${String(node.format)}" is not supported (only date-time, date, time)`);
    }
    const out: Json = { type: 'string' };
    for (const k of ['minLength', 'maxLength'] as const) {
      if (node[k] === undefined) continue;
      if (!Number.isInteger(node[k]) || (node[k] as number) < 0)
        this.malformed(path, k, `"${k}" must be a non-negative integer`);
      out[k] = node[k];
    }
    return out;
  }

  private number(node: Json, path: string): Json {
    for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']) {
      if (node[k] !== undefined)
        this.unsupported(path, k, `"${k}" on a non-integer number is not supported (use type "integer")`);
    }
    return { type: 'number' };
  }

  private integer(node: Json, path: string): Json {
    if (node.multipleOf !== undefined && node.multipleOf !== 1)
      this.unsupported(path, 'multipleOf', '"multipleOf" is not supported');
    const bound = (k: string): number | undefined => {
      const v = node[k];
      if (v === undefined || typeof v === 'boolean') return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v)) this.malformed(path, k, `"${k}" must be a finite number`);
      return v;
    };
    let lo: bigint | undefined;
    let hi: bigint | undefined;
    const raise = (v: bigint) => {
      lo = lo === undefined || v > lo ? v : lo;
    };
    const lower = (v: bigint) => {
      hi = hi === undefined || v < hi ? v : hi;
    };
    const minimum = bound('minimum');
    const maximum = bound('maximum');
    // Draft 4 spells exclusivity as booleans beside minimum/maximum; later drafts as numbers.
    if (minimum !== undefined)
      raise(node.exclusiveMinimum === true ? BigInt(Math.floor(minimum)) + 1n : BigInt(Math.ceil(minimum)));
    if (maximum !== undefined)
      lower(node.exclusiveMaximum === true ? BigInt(Math.ceil(maximum)) - 1n : BigInt(Math.floor(maximum)));
    const exMin = bound('exclusiveMinimum');
    const exMax = bound('exclusiveMaximum');
    if (exMin !== undefined) raise(BigInt(Math.floor(exMin)) + 1n);
    if (exMax !== undefined) lower(BigInt(Math.ceil(exMax)) - 1n);
    if (lo === undefined && hi === undefined) return { type: 'integer' };
    const from: bigint = lo !== undefined && lo > -MAX_SAFE ? lo : -MAX_SAFE;
    const to: bigint = hi !== undefined && hi < MAX_SAFE ? hi : MAX_SAFE;
    if (from > to) this.malformed(path, 'minimum', `no integer lies in [${lo ?? '-inf'}, ${hi ?? 'inf'}]`);
    // Bounds at or beyond the safe range (zod's z.int() emits them) need no grammar of ours.
    if (from === -MAX_SAFE && to === MAX_SAFE) return { type: 'integer' };
    const placeholder = `__attune_int_range_${this.ranges.length}__`;
    this.ranges.push({ placeholder, lo: from, hi: to });
    return { const: placeholder };
  }

  private object(node: Json, path: string): Json {
    for (const k of ['patternProperties', 'propertyNames', 'dependentRequired']) {
      if (node[k] !== undefined) this.unsupported(path, k, `"${k}" is not supported`);
    }
    if (node.unevaluatedProperties !== undefined && node.unevaluatedProperties !== false) {
      this.unsupported(path, 'unevaluatedProperties', 'only "unevaluatedProperties": false is supported');
    }
    const out: Json = { type: 'object' };
    if (node.properties !== undefined) {
      if (!isObject(node.properties)) this.malformed(path, 'properties', '"properties" must be an object');
      const props: Json = {};
      for (const [key, sub] of Object.entries(node.properties))
        props[key] = this.translate(sub, pathOf(`${path}.properties`, key));
      out.properties = props;
    }
    const extra = node.additionalProperties;
    // JSON Schema's default is "allowed", node-llama-cpp's is "none": emitting none is still valid output.
    if (extra === true || (extra === undefined && node.properties === undefined)) out.additionalProperties = true;
    else if (isObject(extra)) out.additionalProperties = this.translate(extra, `${path}.additionalProperties`);
    for (const k of ['minProperties', 'maxProperties'] as const) if (node[k] !== undefined) out[k] = node[k];
    return out;
  }

  private array(node: Json, path: string): Json {
    if (node.uniqueItems === true) this.unsupported(path, 'uniqueItems', '"uniqueItems" is not supported');
    if (node.contains !== undefined) this.unsupported(path, 'contains', '"contains" is not supported');
    const out: Json = { type: 'array' };
    let prefix = node.prefixItems;
    let items = node.items;
    // Draft 4-7 tuples: `items` as an array, `additionalItems` for the rest.
    if (Array.isArray(items)) {
      prefix = items;
      items = node.additionalItems;
    }
    if (prefix !== undefined) {
      if (!Array.isArray(prefix)) this.malformed(path, 'prefixItems', '"prefixItems" must be an array');
      out.prefixItems = prefix.map((s, i) => this.translate(s, pathOf(`${path}.prefixItems`, i)));
    }
    if (items === false) {
      out.maxItems = Array.isArray(prefix) ? prefix.length : 0;
    } else if (items !== undefined && items !== true) {
      out.items = this.translate(items, `${path}.items`);
    }
    for (const k of ['minItems', 'maxItems'] as const) {
      if (node[k] === undefined) continue;
      if (!Number.isInteger(node[k]) || (node[k] as number) < 0)
        this.malformed(path, k, `"${k}" must be a non-negative integer`);
      if (k === 'maxItems' && out.maxItems !== undefined)
        out.maxItems = Math.min(out.maxItems as number, node[k] as number);
      else out[k] = node[k];
    }
    return out;
  }
}

/** Translate a request's schema; throws UnsupportedSchemaError naming the path and keyword. */
export function translateJsonSchema(schema: unknown, strict: boolean): TranslatedSchema {
  const translator = new Translator(strict);
  const root = translator.translate(schema, '');
  // References resolve against the root's definitions; hoist them (both spellings) into `$defs`.
  const defs: Json = {};
  if (isObject(schema)) {
    for (const key of ['definitions', '$defs'] as const) {
      const table = schema[key];
      if (table === undefined) continue;
      if (!isObject(table)) throw new UnsupportedSchemaError(`.${key}`, key, `"${key}" must be an object`);
      for (const [name, sub] of Object.entries(table)) defs[name] = translator.translate(sub, pathOf(`.${key}`, name));
    }
  }
  const out = Object.keys(defs).length > 0 ? { ...root, $defs: defs } : root;
  return { schema: out, ranges: translator.ranges, warnings: translator.warnings };
}
