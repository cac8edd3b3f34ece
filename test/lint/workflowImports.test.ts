import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ESLint } from 'eslint';
import { REPO_ROOT } from '../../src/paths.js';

async function lintAs(path: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: REPO_ROOT });
  const [result] = await eslint.lintText(code, { filePath: join(REPO_ROOT, path) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('lint: workflow sandbox rules', function () {
  // It lints the whole repository: over a minute on 2 busy cores.
  this.timeout(300_000);

  it('rejects Node built-ins, activity implementations and I/O modules in workflow files', async () => {
    const messages = await lintAs(
      'src/workflows/bad.ts',
      [
        "import { readFileSync } from 'node:fs';",
        "import { createHash } from 'crypto';",
        "import { generatePolicyTurn } from '../activities/policy.js';",
        "import { FileArtifactStore } from '../artifacts/store.js';",
        "import OpenAI from 'openai';",
        'export const x = [readFileSync, createHash, generatePolicyTurn, FileArtifactStore, OpenAI, process.env];',
      ].join('\n'),
    );
    assert.equal(
      messages.filter((m) => m.startsWith('@typescript-eslint/no-restricted-imports')).length,
      5,
      messages.join('\n'),
    );
    assert.ok(
      messages.some((m) => m.startsWith('no-restricted-globals')),
      messages.join('\n'),
    );
  });

  it('rejects plain Error throws in workflow and core code, and allows ApplicationFailure', async () => {
    for (const path of ['src/workflows/bad.ts', 'src/core/training/bad.ts']) {
      const messages = await lintAs(
        path,
        [
          "import { ApplicationFailure } from '@temporalio/common';",
          "export function a(): never { throw new Error('plain'); }",
          "export function b(): never { throw new RangeError('plain'); }",
          "export function c(): never { throw ApplicationFailure.nonRetryable('typed', 'Typed'); }",
        ].join('\n'),
      );
      assert.equal(messages.filter((m) => m.startsWith('no-restricted-syntax')).length, 2, messages.join('\n'));
    }
  });

  it('allows activity type imports and pure core modules', async () => {
    const messages = await lintAs(
      'src/workflows/good.ts',
      [
        "import type { PolicyActivities } from '../activities/index.js';",
        "import { emotionState } from '../core/emotion.js';",
        "import { proxyActivities } from '@temporalio/workflow';",
        'export const x = [emotionState, proxyActivities<PolicyActivities>];',
      ].join('\n'),
    );
    assert.deepEqual(messages, []);
  });

  it('the same rules hold for src/core', async () => {
    const messages = await lintAs(
      'src/core/bad.ts',
      "import { readFile } from 'node:fs/promises';\nexport const r = readFile;\n",
    );
    assert.equal(messages.length, 1);
  });

  it('the same rules hold for workflow interceptor fixtures', async () => {
    const messages = await lintAs(
      'test/fixtures/workflowInterceptors/bad.ts',
      "import { readFile } from 'node:fs/promises';\nexport const r = readFile;\n",
    );
    assert.equal(messages.length, 1);
  });

  it('the repository itself is clean', async () => {
    const eslint = new ESLint({ cwd: REPO_ROOT });
    const results = await eslint.lintFiles(['src', 'test']);
    const problems = results.flatMap((r) =>
      r.messages.map((m) => `${r.filePath}:${m.line}: ${m.ruleId}: ${m.message}`),
    );
    assert.deepEqual(problems, []);
  });

  it('the workflow bundle imports no zod (each new workflow would evaluate it again)', () => {
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const m of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)) {
        if (m[1]) continue;
        const spec = m[2]!;
        assert.ok(spec !== 'zod', `${relative(REPO_ROOT, file)} imports zod into the workflow bundle`);
        if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      }
    };
    visit(join(REPO_ROOT, 'src', 'workflows', 'index.ts'));
    assert.ok(seen.size > 10, 'the walk followed the imports');
  });
});
