import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { REPO_ROOT } from '../../src/paths.js';

async function lintAs(path: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: REPO_ROOT });
  const [result] = await eslint.lintText(code, { filePath: join(REPO_ROOT, path) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

const LAYER_MESSAGE = /may not import from a higher layer/;

describe('lint: layers point one way', function () {
  this.timeout(60_000);

  const upward: [file: string, from: string][] = [
    ['src/core/bad.ts', '../config/limits.js'],
    ['src/config/bad.ts', '../workflows/evaluation.js'],
    ['src/config/bad.ts', '../artifacts/store.js'],
    ['src/artifacts/bad.ts', '../activities/index.js'],
    ['src/temporal/bad.ts', '../activities/attuneMetrics.js'],
    ['src/activities/bad.ts', '../workers/llmIoWorkers.js'],
    ['src/workflows/bad.ts', '../client/evaluations.js'],
    ['src/workers/bad.ts', '../cli/main.js'],
    ['src/client/bad.ts', '../cli/main.js'],
    ['src/client/bad.ts', '../activities/index.js'],
  ];
  for (const [file, from] of upward) {
    it(`rejects ${file} importing ${from}`, async () => {
      const messages = await lintAs(file, `import type * as higher from '${from}';\nexport type X = typeof higher;\n`);
      assert.ok(
        messages.some((m) => LAYER_MESSAGE.test(m) || m.includes('src/client may not import activities')),
        messages.join('\n') || 'no messages',
      );
    });
  }

  const downward: [file: string, from: string][] = [
    ['src/config/good.ts', '../core/names.js'],
    ['src/artifacts/good.ts', '../config/artifactsSchema.js'],
    ['src/activities/good.ts', '../artifacts/store.js'],
    ['src/workers/good.ts', '../activities/index.js'],
    ['src/cli/good.ts', '../client/evaluations.js'],
    ['src/temporal/good.ts', '@temporalio/client'],
  ];
  for (const [file, from] of downward) {
    it(`allows ${file} importing ${from}`, async () => {
      const messages = await lintAs(file, `import type * as lower from '${from}';\nexport type X = typeof lower;\n`);
      assert.deepEqual(
        messages.filter((m) => LAYER_MESSAGE.test(m)),
        [],
      );
    });
  }
});
