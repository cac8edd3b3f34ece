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

/** Layers: config is pure projection of the operator's file; the client talks to Temporal, not to activities. */
const layerRule = (forbidden, message) => ({
  '@typescript-eslint/no-restricted-imports': [
    'error',
    { patterns: [{ group: forbidden.flatMap((dir) => [`**/${dir}/*`, `**/${dir}`]), message }] },
  ],
});

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
    files: ['src/workflows/**/*.ts', 'src/core/**/*.ts', 'test/fixtures/workflowInterceptors/**/*.ts'],
    rules: workflowImportRule,
  },
  {
    files: ['src/config/**/*.ts'],
    rules: layerRule(
      ['client', 'activities', 'cli'],
      'src/config builds settings from the config alone: no client, activities or CLI.',
    ),
  },
  {
    files: ['src/client/**/*.ts'],
    rules: layerRule(
      ['activities'],
      'src/client may not import activities: share the code through a neutral module (e.g. src/trainer).',
    ),
  },
);
