import assert from 'node:assert/strict';
import * as fc from 'fast-check';
import { importSageJsonl } from '../../src/scenarios/importSage.js';
import { propertyRuns } from '../support/propertyRuns.js';

type SageRecord = Record<string, unknown>;

/** Text with something besides whitespace, in any script, control characters included. */
const text = fc.string({ unit: 'binary', minLength: 1 }).filter((s) => s.trim().length > 0);

const record = (id: string): fc.Arbitrary<SageRecord> =>
  fc
    .record(
      {
        player: text,
        scene: text,
        task: text,
        main_cha: fc.oneof(fc.string({ unit: 'binary' }), fc.array(fc.string({ unit: 'binary' }), { maxLength: 3 })),
        cha_group: fc.oneof(fc.constantFrom('负面', '被动型', 'avoidant', 'other'), fc.string({ unit: 'binary' })),
        first_talk: fc.string({ unit: 'binary' }),
        extra: fc.jsonValue({ maxDepth: 2 }),
      },
      { requiredKeys: ['player', 'scene', 'task'] },
    )
    .map((r) => ({ id, ...r }));

const validFile = fc
  .uniqueArray(fc.stringMatching(/^[a-z0-9]{1,8}$/), { minLength: 1, maxLength: 5 })
  .chain((ids) => fc.tuple(...ids.map(record)));

/** Values that are not what a SAGE field holds, or only look like it. */
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom('', ' ', '\t\n', '\u00a0', '\u3000', null, 1e308, -0, [], {}, ['']),
);

const FIELDS = ['id', 'player', 'scene', 'task', 'main_cha', 'cha_group', 'first_talk'] as const;

describe('SAGE import (properties)', () => {
  it('generated valid records all import, each from its line, the record kept verbatim', () => {
    fc.assert(
      fc.property(validFile, fc.boolean(), fc.boolean(), (records, crlf, bom) => {
        const lines = records.map((r) => JSON.stringify(r));
        const result = importSageJsonl(`${bom ? '\uFEFF' : ''}${lines.join(crlf ? '\r\n' : '\n')}\n`);
        assert.deepEqual(result.problems, []);
        assert.equal(result.scenarios.length, records.length);
        result.scenarios.forEach(({ scenario, line }, i) => {
          const r = records[i] as SageRecord;
          assert.equal(line, i + 1);
          assert.equal(scenario.id, `sage-${String(r.id)}`);
          assert.equal(scenario.persona.description, (r.player as string).trim());
          assert.equal(scenario.goal, (r.task as string).trim());
          assert.deepEqual(scenario.source?.record, r);
        });
      }),
      propertyRuns(),
    );
  });

  it('a valid record with one field set to an odd value imports or is reported on its line, naming the field', () => {
    fc.assert(
      fc.property(validFile, fc.nat(), fc.constantFrom(...FIELDS), oddValue, (records, at, field, value) => {
        const index = at % records.length;
        const mutated = records.map((r, i) => (i === index ? { ...r, [field]: value } : r));
        const result = importSageJsonl(mutated.map((r) => JSON.stringify(r)).join('\n'));
        const problem = result.problems.find((p) => p.line === index + 1);
        if (problem) assert.ok(problem.message.includes(field), `line ${problem.line}: ${problem.message}`);
        else assert.ok(result.scenarios.some((s) => s.line === index + 1));
      }),
      propertyRuns(),
    );
  });

  it('any text: never throws, every non-blank line is imported or reported once, by its number', () => {
    const jsonlish = fc
      .array(
        fc.oneof(
          fc.string({ unit: 'binary' }),
          fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? ''),
          fc.constantFrom(
            '{',
            '}',
            '{"id": 1}',
            '\r',
            '\u2028',
            '\uFEFF',
            '{"id":1e400,"player":"p","scene":"s","task":"t"}',
          ),
        ),
        { maxLength: 8 },
      )
      .map((lines) => lines.join('\n'));
    fc.assert(
      fc.property(jsonlish, (input) => {
        const result = importSageJsonl(input);
        const lines = input.split(/\r?\n/);
        const numbers = [...result.problems.map((p) => p.line), ...result.scenarios.map((s) => s.line)].sort(
          (a, b) => a - b,
        );
        const nonBlank = lines.flatMap((l, i) => (l.trim() === '' ? [] : [i + 1]));
        assert.deepEqual(numbers, nonBlank);
        for (const p of result.problems) assert.ok(p.message.length > 0);
      }),
      propertyRuns(),
    );
  });
});
