import type { Llama, LlamaGrammar } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { integerRangeGbnf } from './integerRange.js';
import { translateJsonSchema, UnsupportedSchemaError } from './jsonSchema.js';

/** What the request's `response_format` asks of decoding. */
export type OutputConstraint =
  { kind: 'text' } | { kind: 'json_object' } | { kind: 'json_schema'; schema: unknown; strict: boolean };

export interface ResolvedGrammar {
  grammar: LlamaGrammar;
  warnings: string[];
}

/** `json_object` means "some JSON object"; node-llama-cpp's schema form bounds whitespace, unlike llama.cpp's json.gbnf. */
const ANY_OBJECT_SCHEMA = { type: 'object', additionalProperties: true };
/** The stop trigger node-llama-cpp's JSON-schema grammar ends with: the grammar only lets the model stop after it. */
const JSON_GRAMMAR_END = '\n'.repeat(4);

/**
 * Builds grammars from JSON schemas, once per distinct schema: compiling a grammar costs more than
 * a decoding step, and a simulator sends the same schema on every turn. Bounded, least recently used.
 */
export class GrammarCache {
  private readonly entries = new Map<string, Promise<ResolvedGrammar>>();

  constructor(
    private readonly llama: Llama,
    private readonly capacity = 64,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** null for plain text. Rejects with UnsupportedSchemaError when the schema cannot be enforced. */
  async get(constraint: OutputConstraint): Promise<ResolvedGrammar | null> {
    if (constraint.kind === 'text') return null;
    const key =
      constraint.kind === 'json_object' ? 'json_object' : JSON.stringify([constraint.strict, constraint.schema]);
    let entry = this.entries.get(key);
    if (entry) {
      // Refresh recency.
      this.entries.delete(key);
      this.entries.set(key, entry);
      return entry;
    }
    entry = this.build(constraint);
    this.entries.set(key, entry);
    // A failed build must not poison the cache for a later, identical request (it would fail the same way, but cheaply re-checked).
    entry.catch(() => this.entries.delete(key));
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return entry;
  }

  private async build(constraint: Exclude<OutputConstraint, { kind: 'text' }>): Promise<ResolvedGrammar> {
    if (constraint.kind === 'json_object') {
      return { grammar: await this.llama.createGrammarForJsonSchema(ANY_OBJECT_SCHEMA as never), warnings: [] };
    }
    const translated = translateJsonSchema(constraint.schema, constraint.strict);
    let base: LlamaGrammar;
    try {
      base = await this.llama.createGrammarForJsonSchema(translated.schema as never);
    } catch (error) {
      throw new UnsupportedSchemaError(
        '',
        'schema',
        `node-llama-cpp could not build a grammar: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (translated.ranges.length === 0) return { grammar: base, warnings: translated.warnings };
    // Integer ranges: node-llama-cpp rendered each as a quoted placeholder literal; put our rule in its place.
    let text = base.grammar;
    const rules: string[] = [];
    translated.ranges.forEach((range, i) => {
      const literal = JSON.stringify(JSON.stringify(range.placeholder));
      if (!text.includes(literal))
        throw new Error(`internal: placeholder ${range.placeholder} not found in the generated grammar`);
      const name = `attune-int-range-${i}`;
      text = text.split(literal).join(name);
      rules.push(`${name} ::= ${integerRangeGbnf(range.lo, range.hi)}`);
    });
    const grammar = await this.llama.createGrammar({
      grammar: `${text}\n${rules.join('\n')}\n`,
      stopGenerationTriggers: [JSON_GRAMMAR_END],
      trimWhitespaceSuffix: true,
    });
    return { grammar, warnings: translated.warnings };
  }
}
