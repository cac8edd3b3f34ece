import assert from 'node:assert/strict';
import { analysisJsonSchema } from '../../src/core/analysis.js';
import {
  analysisMaxCompletionTokens,
  MAX_BYTES_PER_STRING_CHAR,
  MAX_COMPLETION_TOKENS,
  MAX_WHITESPACE_BYTES,
} from '../../src/core/analysisTokenBudget.js';

describe('analysis token budget', () => {
  it('is the byte length of the largest complete object the schema admits', () => {
    // Every character a \uXXXX escape, the most whitespace at every place, the longest integer.
    const ws = ' '.repeat(MAX_WHITESPACE_BYTES);
    const escape = '\\u4e2d';
    assert.equal(escape.length, MAX_BYTES_PER_STRING_CHAR);
    for (const maxChars of [1, 60, 120, 500]) {
      const schema = analysisJsonSchema(maxChars) as { properties: Record<string, { type: string }> };
      const fields = Object.entries(schema.properties).map(([key, p]) => {
        const value = p.type === 'string' ? `"${escape.repeat(maxChars)}"` : '-10';
        return `${ws}${JSON.stringify(key)}:${ws}${value}`;
      });
      const worst = `{${fields.join(',')}${ws}}\n\n\n\n`;
      assert.equal(Object.keys(JSON.parse(worst) as object).length, 4);
      assert.equal(Buffer.byteLength(worst), analysisMaxCompletionTokens(maxChars), `maxChars ${maxChars}`);
    }
  });

  it('grows with the bound on the text fields', () => {
    assert.ok(analysisMaxCompletionTokens(60) < analysisMaxCompletionTokens(120));
    assert.ok(analysisMaxCompletionTokens(120) > 3 * 120 * MAX_BYTES_PER_STRING_CHAR);
    // Never more than a config may ask for: a huge bound asks for the most, not for what no server accepts.
    assert.equal(analysisMaxCompletionTokens(1e9), MAX_COMPLETION_TOKENS);
  });
});
