import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/** Workflow code must be deterministic and sandbox-safe: no Node APIs, no I/O, activity *types* only. */
const workflowImportRule = {
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      paths: [
        ...nodeBuiltins.map((name) => ({
          name,
          message: 'Workflow/core code may not use Node built-ins: do I/O in an activity.',
        })),
        ...[
          '@temporalio/client',
          '@temporalio/worker',
          '@temporalio/activity',
          '@temporalio/testing',
          'openai',
          'yaml',
          'tsx',
        ].map((name) => ({ name, message: 'Workflow/core code may not import I/O libraries: use an activity.' })),
      ],
      patterns: [
        {
          group: ['**/activities/*', '**/activities'],
          allowTypeImports: true,
          message: 'Workflows import activity types only (import type ...).',
        },
        {
          group: ['**/journal/*', '!**/journal/journalPatches*'],
          allowTypeImports: true,
          message: "Workflows import the turn journal's types and patch names only (it does I/O).",
        },
        {
          group: [
            '**/artifacts/*',
            '**/cli/*',
            '**/workers/*',
            '**/scenarios/*',
            '**/localllm/*',
            '**/config/load*',
            '**/temporal/devServer*',
            '**/temporal/connect*',
            '**/temporal/cliBinary*',
            '**/temporal/runtimeLogging*',
            '**/log',
            '**/log.js',
            '**/paths',
            '**/paths.js',
          ],
          message: 'This module does I/O; workflows and core may not import it.',
        },
      ],
    },
  ],
  // A plain Error thrown in workflow code fails the workflow task, which Temporal retries forever.
  'no-restricted-syntax': [
    'error',
    {
      selector: 'ThrowStatement > NewExpression[callee.name=/^(Error|TypeError|RangeError|SyntaxError)$/]',
      message:
        'Workflow-side code throws ApplicationFailure with a type (or waits for the operator), never a plain Error.',
    },
  ],
  'no-restricted-globals': [
    'error',
    { name: 'process', message: 'No process access in workflows/core.' },
    { name: 'require', message: 'No dynamic require in workflows/core.' },
    { name: 'setTimeout', message: 'Use workflow.sleep in workflows.' },
    { name: 'fetch', message: 'No network in workflows/core: use an activity.' },
  ],
};

/**
 * Layers point one way: each layer of src/ imports only its own and lower ones. The operator's inputs
 * (the config and the scenario library) sit above the pure core; the I/O edges above them; then the
 * activities; the workflows and the workers that host them; the client; the CLI on top.
 */
const LAYERS = [
  ['core'],
  ['config', 'scenarios'],
  ['artifacts', 'vllm', 'codec', 'localllm', 'report', 'trainer', 'temporal', 'ruleuser', 'http', 'sandbox'],
  ['activities', 'journal'],
  ['workflows', 'workers'],
  ['client'],
  ['cli'],
];

/** Import patterns for the directories of src/ that `dir` may not import: every higher layer, plus `extra`. */
function higherLayerPatterns(dir, extra = []) {
  const level = LAYERS.findIndex((layer) => layer.includes(dir));
  const forbidden = [...LAYERS.slice(level + 1).flat(), ...extra];
  return forbidden.length === 0
    ? []
    : [
        {
          // Relative imports only: `@temporalio/client` is a package, not src/client.
          regex: `^\\.\\.?/(.*/)?(${forbidden.join('|')})(/|$)`,
          message: `src/${dir} may not import from a higher layer (${forbidden.join(', ')}): move the shared code down.`,
        },
      ];
}

/** Workflow and core code keep the sandbox rules and add their layer's. */
function withLayer(rules, dir) {
  const [level, options] = rules['@typescript-eslint/no-restricted-imports'];
  return {
    ...rules,
    '@typescript-eslint/no-restricted-imports': [
      level,
      { ...options, patterns: [...options.patterns, ...higherLayerPatterns(dir)] },
    ],
  };
}

// The client talks to Temporal, not to activities: shared code lives in a neutral module (e.g. src/trainer).
const EXTRA_FORBIDDEN = { client: ['activities'] };

const layerConfigs = LAYERS.flat()
  .filter((dir) => !['core', 'workflows', 'cli'].includes(dir))
  .map((dir) => ({
    files: [`src/${dir}/**/*.ts`],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: higherLayerPatterns(dir, EXTRA_FORBIDDEN[dir]) },
      ],
    },
  }));

export default tseslint.config(
  { ignores: ['node_modules/**', '.venv/**', '.attune/**', 'trainer/**', 'test-output/**', 'bin/**', '**/*.mjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // Test fixtures bundled into workflows (interceptor modules) run in the same sandbox.
    files: ['test/fixtures/workflowInterceptors/**/*.ts'],
    rules: workflowImportRule,
  },
  { files: ['src/core/**/*.ts'], rules: withLayer(workflowImportRule, 'core') },
  { files: ['src/workflows/**/*.ts'], rules: withLayer(workflowImportRule, 'workflows') },
  ...layerConfigs,
  {
    // No product function a reader cannot hold in mind.
    files: ['src/**/*.ts', 'src/**/*.js'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
);
