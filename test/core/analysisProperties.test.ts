import assert from 'node:assert/strict';
import * as fc from 'fast-check';
import { analysisProblem, parseAnalysis, type Analysis } from '../../src/core/analysis.js';
import { propertyRuns } from '../support/propertyRuns.js';

const change = fc.integer({ min: -10, max: 10 });

/** Free text as a model writes it, including braces, fences, quotes and control characters. */
const freeText = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom(
    '',
    ' ',
    '{',
    '}',
    '```',
    '```json',
    '"',
    '\\',
    '\u0000',
    '\u2028',
    '情绪变化：+3',
    'Emotion change: 7',
  ),
  // A policy under training may write an analysis into its reply, and the user may quote it.
  change.map((n) => `he wrote {"emotionChange": ${n}} to me`),
  change.map((n) => `\`\`\`json {"emotion_change": "${n}"} \`\`\``),
);

const analysis: fc.Arbitrary<Analysis> = fc.record({
  assistantIntent: freeText,
  goalFit: freeText,
  innerThoughts: freeText,
  emotionChange: change,
});

function trimmed(a: Analysis): Analysis {
  return {
    ...a,
    assistantIntent: a.assistantIntent.trim(),
    goalFit: a.goalFit.trim(),
    innerThoughts: a.innerThoughts.trim(),
  };
}

/** Where a server put the JSON: bare, pretty-printed, fenced, or inside prose. */
const jsonWrapping = fc.constantFrom(
  (json: string) => json,
  (json: string) => `\n  ${json}\n`,
  (json: string) => `\`\`\`json\n${json}\n\`\`\``,
  (json: string) => `Here is my analysis:\n${json}\nThat is all.`,
);

describe('simulator analysis parsing (properties)', () => {
  it('generated JSON output parses to the generated numbers and (trimmed) texts', () => {
    fc.assert(
      fc.property(analysis, fc.constantFrom(0, 2), jsonWrapping, (a, indent, wrap) => {
        assert.deepEqual(parseAnalysis(wrap(JSON.stringify(a, null, indent))), trimmed(a));
      }),
      propertyRuns(),
    );
  });

  it('generated labelled sections parse to the generated change', () => {
    const lineText = freeText.map((t) => t.replace(/[\r\n\u2028\u2029]/g, ' '));
    const labels = fc.constantFrom(
      ['Assistant intent', 'Goal fit', 'Inner thoughts', 'Emotion change'],
      ['**Assistant intent**', '**Goal fit**', '**Inner thoughts**', '**Emotion change**'],
      ['助手意图', '契合度', '内心想法', '情绪变化'],
    );
    const sign = fc.constantFrom('', '+');
    fc.assert(
      fc.property(labels, lineText, lineText, lineText, change, sign, (l, intent, fit, thoughts, n, plus) => {
        const raw = `${l[0]}: ${intent}\n${l[1]}: ${fit}\n${l[2]}: ${thoughts}\n${l[3]}: ${n > 0 ? plus : ''}${n}`;
        assert.equal(parseAnalysis(raw)?.emotionChange, n, raw);
      }),
      propertyRuns(),
    );
  });

  it('any text parses to null or to an analysis inside the schema', () => {
    const mutated = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? ''),
      fc
        .tuple(
          analysis,
          fc.constantFrom('assistantIntent', 'goalFit', 'innerThoughts', 'emotionChange'),
          fc.jsonValue(),
        )
        .map(([a, key, value]) => JSON.stringify({ ...a, [key]: value })),
      fc
        .tuple(
          analysis,
          fc.constantFrom('1e400', '-1e400', 'NaN', '"NaN"', '"+"', '99999999999999999999', '-0', '"−7"'),
        )
        .map(([a, n]) =>
          JSON.stringify({ ...a, emotionChange: 0 }).replace(/"emotionChange":0/, `"emotionChange":${n}`),
        ),
    );
    fc.assert(
      fc.property(mutated, (raw) => {
        const parsed = parseAnalysis(raw);
        // A rejection names the field it could not read.
        if (parsed === null) return assert.match(analysisProblem(raw), /^emotionChange: /);
        assert.ok(Number.isInteger(parsed.emotionChange) && parsed.emotionChange >= -10 && parsed.emotionChange <= 10);
        for (const key of ['assistantIntent', 'goalFit', 'innerThoughts'] as const)
          assert.equal(typeof parsed[key], 'string');
      }),
      propertyRuns(),
    );
  });

  it('says why a reply could not be scored, naming the field', () => {
    assert.equal(analysisProblem('{"goalFit": "yes"}'), 'emotionChange: missing from the JSON object');
    assert.equal(analysisProblem('{"emotion_change": "lots"}'), 'emotionChange: "lots" is not a number');
    assert.equal(
      analysisProblem('Inner thoughts: hm\nEmotion change: unsure'),
      'emotionChange: "unsure" is not a number',
    );
    assert.match(analysisProblem('I feel better.'), /^emotionChange: missing \(neither a JSON object/);
  });
});
