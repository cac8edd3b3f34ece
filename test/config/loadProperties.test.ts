import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fc from 'fast-check';
import { stringify } from 'yaml';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { propertyRuns } from '../support/propertyRuns.js';

const dir = mkdtempSync(join(tmpdir(), 'attune-cfg-prop-'));
let files = 0;
function yamlFile(text: string): string {
  const file = join(dir, `config-${files++}.yaml`);
  writeFileSync(file, text);
  return file;
}

type Tree = Record<string, unknown>;

/** Leaf fields with values the schema accepts; sizes stay inside Temporal's limits. */
const validLeaves: Record<string, fc.Arbitrary<unknown>> = {
  'temporal.namespace': fc.string({ minLength: 1, unit: 'grapheme' }),
  'temporal.taskQueuePrefix': fc.stringMatching(/^[A-Za-z0-9._-]{0,12}$/),
  'temporal.devServer.port': fc.integer({ min: 1, max: 65535 }),
  home: fc.string({ minLength: 1, unit: 'binary' }),
  'policy.model': fc.string({ minLength: 1, unit: 'binary' }),
  'policy.temperature': fc.double({ min: 0, max: 2, noNaN: true }),
  'policy.maxConcurrency': fc.integer({ min: 1, max: 1_000_000 }),
  'policy.retry.backoffCoefficient': fc.double({ min: 1, max: 1e6, noNaN: true }),
  'simulator.apiKeyEnv': fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,20}$/),
  'simulator.parseRetries': fc.integer({ min: 0, max: 10 }),
  'simulator.structuredOutput': fc.constantFrom('json_schema', 'json_object', 'none'),
  'rollout.dialogue.initialEmotion': fc.integer({ min: 0, max: 100 }),
  'rollout.dialogue.maxTurns': fc.integer({ min: 1, max: 30 }),
  'rollout.dialogue.think': fc.boolean(),
  'rollout.llmCalls': fc.constantFrom('activity', 'local'),
  'evaluation.seed': fc.maxSafeNat(),
  'training.seed': fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  'training.evalScenarios': fc.array(fc.string({ unit: 'binary' }), { maxLength: 4 }),
  'training.hyperparameters.learning_rate': fc.double({ min: 1e-12, max: 1, noNaN: true }),
  'training.lora': fc.constant(null),
};
const leafPaths = Object.keys(validLeaves);

function setIn(tree: Tree, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = tree;
  for (const key of keys.slice(0, -1)) node = (node[key] ??= {}) as Tree;
  Object.defineProperty(node, keys[keys.length - 1] as string, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

function getIn(tree: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, key) => (node as Tree)[key], tree);
}

const validConfig = fc
  .subarray(leafPaths, { minLength: 1 })
  .chain((paths) =>
    fc.tuple(...paths.map((p) => validLeaves[p] as fc.Arbitrary<unknown>)).map((values) => ({ paths, values })),
  );

/** Keys that mean something to JavaScript objects, next to ordinary identifiers. */
const oddKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'),
  fc.stringMatching(/^[a-z][A-Za-z0-9_]{0,10}$/),
);

/** Values of every kind, including the ones YAML and JSON make awkward. */
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(Number.NaN, Infinity, -Infinity, 1e308, -0, 2 ** 53 + 1, '', ' ', '\u0000', 'NaN', '1e400'),
  fc.string({ unit: 'binary' }),
);

function assertNamesField(error: unknown, candidates: string[], where?: string): void {
  assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
  if (where !== undefined) assert.ok(error.message.includes(where), `message does not name ${where}: ${error.message}`);
  assert.ok(
    candidates.some((c) => error.message.includes(c)),
    `message names none of ${candidates.join(', ')}: ${error.message}`,
  );
}

/** The dotted prefixes of a path, longest first: the field a rejection may name. */
function prefixes(path: string): string[] {
  const keys = path.split('.');
  return keys.map((_, i) => keys.slice(0, keys.length - i).join('.'));
}

describe('config loading (properties)', () => {
  it('a generated valid config file loads with the values written', () => {
    fc.assert(
      fc.property(validConfig, ({ paths, values }) => {
        const tree: Tree = {};
        paths.forEach((p, i) => setIn(tree, p, values[i]));
        const config = loadConfig({ file: yamlFile(stringify(tree)), env: {} });
        paths.forEach((p, i) => assert.deepEqual(getIn(config, p), values[i], p));
      }),
      propertyRuns(),
    );
  });

  it('a valid config with one key added anywhere is rejected naming that key and the file', () => {
    fc.assert(
      fc.property(validConfig, fc.nat(), oddKey, oddValue, ({ paths, values }, at, key, value) => {
        const tree: Tree = {};
        paths.forEach((p, i) => setIn(tree, p, values[i]));
        const sections = ['', ...paths.flatMap((p) => prefixes(p).slice(1))];
        const section = sections[at % sections.length] as string;
        const target = section === '' ? tree : (getIn(tree, section) as Tree);
        if (key in target && Object.hasOwn(target, key)) return;
        const path = section === '' ? key : `${section}.${key}`;
        setIn(tree, path, value);
        const file = yamlFile(stringify(tree));
        assert.throws(
          () => loadConfig({ file, env: {} }),
          (error: unknown) => {
            assertNamesField(error, [`${path}: unknown key`], file);
            return true;
          },
        );
      }),
      propertyRuns(),
    );
  });

  it('a valid config with one field replaced by an odd value loads it or names that field', () => {
    fc.assert(
      fc.property(validConfig, fc.nat(), oddValue, ({ paths, values }, at, value) => {
        const tree: Tree = {};
        paths.forEach((p, i) => setIn(tree, p, values[i]));
        const path = paths[at % paths.length] as string;
        setIn(tree, path, value);
        const file = yamlFile(stringify(tree));
        let config: unknown;
        try {
          config = loadConfig({ file, env: {} });
        } catch (error) {
          assertNamesField(error, prefixes(path), file);
          return;
        }
        assert.deepEqual(getIn(config, path), value);
      }),
      propertyRuns(),
    );
  });

  it('any text as a config file loads or is rejected with a ConfigError naming the file', () => {
    const yamlish = fc
      .array(
        fc.oneof(
          fc.constantFrom(
            '\n',
            '  ',
            '\t',
            ': ',
            '- ',
            '? ',
            '&a ',
            '*a',
            '!!set ',
            '!!omap ',
            '!!binary ',
            '<<: ',
            '---',
          ),
          fc.constantFrom('{', '}', '[', ']', ',', '"', "'", '#', '|', '>', '%YAML 1.1', 'extends: '),
          fc.constantFrom('policy', 'rollout', 'maxTurns', '__proto__', '1e400', '.nan', '~', 'null'),
          fc.string({ unit: 'binary', maxLength: 6 }),
        ),
        { maxLength: 30 },
      )
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(yamlish, (text) => {
        const file = yamlFile(text);
        try {
          loadConfig({ file, env: {} });
        } catch (error) {
          assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
          assert.ok(error.message.includes(file), error.message);
        }
      }),
      propertyRuns(),
    );
  });

  it('documents with anchors and aliases load or are rejected with a ConfigError naming the file', () => {
    const aliasDocument = fc
      .tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 12 }))
      .map(([depth, width]) => {
        const lines = ['a0: &a0 [x]'];
        for (let d = 1; d <= depth; d++)
          lines.push(
            `a${d}: &a${d} [${Array(width)
              .fill(`*a${d - 1}`)
              .join(', ')}]`,
          );
        return lines.join('\n');
      });
    fc.assert(
      fc.property(aliasDocument, (text) => {
        const file = yamlFile(text);
        assert.throws(
          () => loadConfig({ file, env: {} }),
          (error: unknown) => {
            assertNamesField(error, [file]);
            return true;
          },
        );
      }),
      propertyRuns(),
    );
  });

  it('a section written as a tagged YAML collection (!!set, !!omap, !!pairs) is rejected naming it', () => {
    const section = fc.constantFrom('policy', 'simulator', 'rollout', 'training', 'evaluation', 'policy.retry');
    const keys = fc.uniqueArray(fc.constantFrom('model', 'think', 'maxTurns', 'seed', 'port', 'other'), {
      minLength: 1,
      maxLength: 3,
    });
    const tagged = fc.oneof(
      keys.map((k) => `!!set {${k.join(', ')}}`),
      keys.map((k) => `!!omap [${k.map((key) => `${key}: 1`).join(', ')}]`),
      keys.map((k) => `!!pairs [${k.map((key) => `${key}: 1`).join(', ')}]`),
    );
    fc.assert(
      fc.property(section, tagged, fc.boolean(), (path, value, viaSet) => {
        const [top, sub] = path.split('.');
        const file = viaSet ? undefined : yamlFile(sub ? `${top}:\n  ${sub}: ${value}\n` : `${top}: ${value}\n`);
        assert.throws(
          // `think` and `maxTurns` of a section are flat keys of an earlier release: moved, with a warning.
          () => loadConfig({ file, env: {}, set: viaSet ? [`${path}=${value}`] : [], onWarning: () => {} }),
          (error: unknown) => {
            assertNamesField(error, [path], file);
            return true;
          },
        );
      }),
      propertyRuns(),
    );
  });
});
