import assert from 'node:assert/strict';
import * as fc from 'fast-check';
import { parsePlainReply, parsePolicyOutput, parseThinkThenSay } from '../../src/core/think.js';
import { propertyRuns } from '../support/propertyRuns.js';

const TAG = /<\/?think>/;

/** Text with tag fragments, whitespace and control characters, so tags get built and broken. */
const tagSoup = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '<think>',
        '</think>',
        '<thi',
        'nk>',
        '</',
        '<',
        '>',
        'think',
        ' ',
        '\n',
        '\t',
        '\u00a0',
        '\u2028',
      ),
      fc.string({ unit: 'binary', maxLength: 6 }),
    ),
    { maxLength: 20 },
  )
  .map((parts) => parts.join(''));

/** A part of a well-formed output: trimmed, non-empty, no think tag inside. */
const part = fc
  .string({ unit: 'binary', minLength: 1 })
  .map((s) => s.trim())
  .filter((s) => s.length > 0 && !TAG.test(s));

describe('think parsing (properties)', () => {
  it('think-then-say round-trips: parse(render(x)) == x', () => {
    const space = fc.constantFrom('', ' ', '\n', '\n\n', '\t ');
    fc.assert(
      fc.property(part, part, space, space, space, (thinking, reply, before, inside, after) => {
        const raw = `${before}<think>${inside}${thinking}${inside}</think>${after}${reply}${after}`;
        assert.deepEqual(parseThinkThenSay(raw), { thinking, reply, malformed: false });
      }),
      propertyRuns(),
    );
  });

  it('any output parses to a reply with no think tag, or is malformed with a reason and no reply', () => {
    fc.assert(
      fc.property(fc.oneof(tagSoup, fc.string({ unit: 'binary' })), fc.boolean(), (raw, think) => {
        const parsed = parsePolicyOutput(raw, think);
        if (parsed.malformed) {
          assert.equal(parsed.reply, '');
          assert.ok(parsed.problem && parsed.problem.length > 0);
          return;
        }
        assert.ok(parsed.reply.length > 0);
        assert.equal(parsed.reply, parsed.reply.trim());
        if (think) {
          assert.doesNotMatch(parsed.reply, TAG);
          assert.ok(parsed.thinking && !TAG.test(parsed.thinking));
        }
      }),
      propertyRuns(),
    );
  });

  it('plain mode never passes a complete think block on to the reply', () => {
    // Think blocks spliced into each other at any position, around free text.
    const block = part.map((text) => `<think>${text}</think>`);
    const spliced = fc
      .tuple(fc.oneof(tagSoup, block), fc.array(fc.tuple(fc.nat(), block), { maxLength: 3 }))
      .map(([text, inserts]) =>
        inserts.reduce(
          (out, [at, b]) => out.slice(0, at % (out.length + 1)) + b + out.slice(at % (out.length + 1)),
          text,
        ),
      );
    fc.assert(
      fc.property(spliced, (raw) => {
        const parsed = parsePlainReply(raw);
        assert.doesNotMatch(parsed.reply, /<think>[\s\S]*?<\/think>/);
      }),
      propertyRuns(),
    );
  });
});
