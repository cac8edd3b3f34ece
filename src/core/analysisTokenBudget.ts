import { ANALYSIS_JSON_SCHEMA } from './analysis.js';

/**
 * Tokens are bounded through bytes: every token of a byte-level BPE vocabulary (SmolLM2's, GPT's,
 * Qwen's) decodes to at least one byte, and a grammar admits no special token inside the object.
 * So a completion of N UTF-8 bytes takes at most N tokens, whatever the text's language.
 */

/** The most bytes one character of a JSON string can take: a `\uXXXX` escape (a raw character takes at most 4). */
export const MAX_BYTES_PER_STRING_CHAR = 6;
/**
 * Whitespace allowed at one place between JSON tokens. node-llama-cpp's JSON grammar allows a
 * newline with the nesting's indent (4 spaces or a tab) or one space; this leaves room for more.
 */
export const MAX_WHITESPACE_BYTES = 8;
/** node-llama-cpp's JSON grammar ends the object with four newlines, its stop trigger. */
const GRAMMAR_END_BYTES = 4;

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

function valueBytes(property: { type: string; minimum?: number; maximum?: number }, maxChars: number): number {
  if (property.type === 'string') return 2 + maxChars * MAX_BYTES_PER_STRING_CHAR;
  // An integer in [minimum, maximum]: the longer of its two ends as JSON writes them.
  return Math.max(String(property.minimum).length, String(property.maximum).length);
}

/** The most completion tokens a config may ask for (`maxTokens`); a budget never asks for more. */
export const MAX_COMPLETION_TOKENS = 32_768;

/**
 * The most completion tokens a complete analysis object can take when each text field holds at
 * most `maxChars` characters (the schema's maxLength): a call given this many tokens is never cut
 * off before its closing brace.
 */
export function analysisMaxCompletionTokens(maxChars: number): number {
  const properties = Object.entries(ANALYSIS_JSON_SCHEMA.properties) as [
    string,
    { type: string; minimum?: number; maximum?: number },
  ][];
  // Braces, the commas between fields, whitespace before "}", the end marker.
  let bytes = 2 + (properties.length - 1) + MAX_WHITESPACE_BYTES + GRAMMAR_END_BYTES;
  for (const [key, property] of properties) {
    // whitespace, "key", ":", whitespace, value
    bytes += MAX_WHITESPACE_BYTES + utf8Bytes(JSON.stringify(key)) + 1 + MAX_WHITESPACE_BYTES;
    bytes += valueBytes(property, maxChars);
  }
  return Math.min(bytes, MAX_COMPLETION_TOKENS);
}
