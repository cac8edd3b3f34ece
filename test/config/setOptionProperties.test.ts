import assert from 'node:assert/strict';
import * as fc from 'fast-check';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { propertyRuns } from '../support/propertyRuns.js';

type Tree = Record<string, unknown>;

const defaults = loadConfig({ env: {} });

/** Fields --set may change, with values the schema accepts. */
const validSets: Record<string, fc.Arbitrary<unknown>> = {
  'temporal.namespace': fc.string({ minLength: 1, unit: 'binary' }),
  'temporal.devServer.uiPort': fc.integer({ min: 1, max: 65535 }),
  home: fc.string({ minLength: 1, unit: 'binary' }),
  'policy.model': fc.string({ minLength: 1, unit: 'binary' }),
  'policy.topP': fc.double({ min: Number.MIN_VALUE, max: 1, noNaN: true }),
  'policy.retry.maximumAttempts': fc.integer({ min: 0, max: 2 ** 40 }),
  'simulator.temperature': fc.double({ min: 0, max: 2, noNaN: true }),
  'simulator.analysisMaxChars': fc.integer({ min: 1, max: 1e9 }),
  'rollout.dialogue.think': fc.boolean(),
  'rollout.workflowTaskTimeoutMs': fc.integer({ min: 1000, max: 120_000 }),
  'evaluation.concurrency': fc.integer({ min: 1, max: 500 }),
  'training.algorithm': fc.constantFrom('grpo', 'ppo'),
  'training.maxFailedShare': fc.double({ min: 0, max: 1, noNaN: true }),
  'training.evalScenarios': fc.array(fc.string({ unit: 'binary' }), { maxLength: 3 }),
  'training.hyperparameters.gradient_checkpointing': fc.boolean(),
  'localLlm.modelPath': fc.string({ unit: 'binary' }),
};

const validSet = fc
  .constantFrom(...Object.keys(validSets))
  .chain((path) => (validSets[path] as fc.Arbitrary<unknown>).map((value) => ({ path, value })));

function withField(tree: unknown, path: string, value: unknown): unknown {
  const [key, ...rest] = path.split('.') as [string, ...string[]];
  const node = { ...(tree as Tree) };
  node[key] = rest.length === 0 ? value : withField(node[key] ?? {}, rest.join('.'), value);
  return node;
}

/** Dotted keys built from real section and field names, typos and names that mean something to JavaScript. */
const dottedKey = fc
  .array(
    fc.oneof(
      fc.constantFrom('policy', 'simulator', 'rollout', 'training', 'retry', 'hyperparameters', 'lora', 'devServer'),
      fc.constantFrom('maxTurns', 'model', 'seed', 'think', 'r', 'port', 'evalScenarios', 'modle'),
      fc.constantFrom('constructor', 'toString', 'hasOwnProperty', 'prototype', 'valueOf', '__proto__', '0', ''),
      fc.string({ unit: 'grapheme-ascii', maxLength: 5 }),
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((keys) => keys.join('.'));

/** Raw values as a shell would pass them: YAML-ish, NaN-ish, huge, control characters. */
const rawValue = fc.oneof(
  fc.constantFrom('', 'NaN', '.nan', '.inf', '-.inf', '1e400', '-0', '9007199254740993', '0x10', '1_000', '~', 'null'),
  fc.constantFrom('[1, 2', '{a: 1}', '[]', '{}', '*a', '&a x', '!!binary aGk=', '!!set {a}', '- x', 'a: b', '"x', "'x"),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? ''),
);

function prefixes(path: string): string[] {
  const keys = path.split('.');
  return keys.map((_, i) => keys.slice(0, keys.length - i).join('.'));
}

describe('--set overrides (properties)', () => {
  it('--set path=value sets exactly that field', () => {
    fc.assert(
      fc.property(validSet, ({ path, value }) => {
        const config = loadConfig({ env: {}, set: [`${path}=${JSON.stringify(value)}`] });
        assert.deepEqual(config, withField(defaults, path, value));
      }),
      propertyRuns(),
    );
  });

  it('any --set key=value loads or is rejected with a ConfigError naming the key', () => {
    fc.assert(
      fc.property(dottedKey, rawValue, (key, raw) => {
        const option = `${key}=${raw}`;
        try {
          loadConfig({ env: {}, set: [option] });
        } catch (error) {
          assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
          const named = [`--set ${option}`, ...prefixes(key).filter((p) => p !== '')];
          assert.ok(
            named.some((n) => error.message.includes(n)),
            `message names neither the option nor the key ${key}: ${error.message}`,
          );
        }
      }),
      propertyRuns(),
    );
  });
});
