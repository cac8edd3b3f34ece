import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CodeProblem } from '../../src/core/capability/capabilitySuites.js';
import { assembleProgram } from '../../src/core/capability/codeProgram.js';
import { scoreMathAnswer } from '../../src/core/capability/mathAnswer.js';
import {
  CAPABILITY_DATA_DIR,
  CAPABILITY_DATASETS,
  DatasetMismatchError,
  loadCapabilityDataset,
  vendoredDataset,
} from '../../src/scenarios/capabilityDatasets.js';
import { runUntrustedPython } from '../../src/sandbox/runUntrustedPython.js';
import { humanEvalRows } from '../support/capabilityAnswers.js';

describe('capability data sets (evals/data)', function () {
  this.timeout(120_000);

  it('are the files their hashes name, here and in the README, 50 problems each', () => {
    const readme = readFileSync(join(CAPABILITY_DATA_DIR, 'README.md'), 'utf8');
    for (const suite of ['math', 'code'] as const) {
      const entry = CAPABILITY_DATASETS[suite];
      const bytes = readFileSync(join(CAPABILITY_DATA_DIR, entry.file));
      assert.equal(createHash('sha256').update(bytes).digest('hex'), entry.sha256, entry.file);
      assert.ok(readme.includes(`\`${entry.file}\``) && readme.includes(entry.sha256), `README names ${entry.file}`);
      const { dataset, problems } = vendoredDataset(suite);
      assert.equal(dataset.problems, 50);
      assert.equal(problems.length, 50);
      assert.equal(dataset.license, 'MIT');
    }
  });

  it("refuses a file whose hash is not the run's, and a name outside the data directory", () => {
    const dir = mkdtempSync(join(tmpdir(), 'attune-data-'));
    writeFileSync(join(dir, 'one.jsonl'), `${JSON.stringify({ id: 'q1', prompt: 'Two plus two?', expected: '4' })}\n`);
    assert.equal(loadCapabilityDataset('math', 'one.jsonl', undefined, dir).problems.get('q1')?.suite, 'math');
    assert.throws(() => loadCapabilityDataset('math', 'one.jsonl', '0'.repeat(64), dir), DatasetMismatchError);
    assert.throws(() => loadCapabilityDataset('math', '../one.jsonl', undefined, dir), DatasetMismatchError);
    assert.throws(() => loadCapabilityDataset('code', 'one.jsonl', undefined, dir), /not a code problem/);
  });

  it("maths: the answer extracted from each GSM8K worked answer is the data set's", () => {
    const rows = readFileSync(join(CAPABILITY_DATA_DIR, CAPABILITY_DATASETS.math.file), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; expected: string; upstream_answer: string });
    const wrong = rows.filter((r) => !scoreMathAnswer(r.upstream_answer, r.expected).solved).map((r) => r.id);
    assert.deepEqual(wrong, []);
  });

  it('code: every reference solution passes its tests in the sandbox, as a body and as a whole definition', async () => {
    const { problems } = vendoredDataset('code');
    const byId = new Map(humanEvalRows().map((r) => [r.task_id, r]));
    const failing: string[] = [];
    for (const problem of problems as CodeProblem[]) {
      const row = byId.get(problem.id)!;
      const asBody = `\`\`\`python\n${row.canonical_solution}\`\`\``;
      const asDefinition = `\`\`\`python\n${row.prompt}${row.canonical_solution}\`\`\``;
      for (const [form, reply] of [
        ['body', asBody],
        ['definition', asDefinition],
      ] as const) {
        const result = await runUntrustedPython({ program: assembleProgram(problem, reply), timeoutMs: 10_000 });
        if (result.outcome !== 'passed')
          failing.push(`${problem.id} (${form}): ${result.outcome} ${result.stderrTail}`);
      }
    }
    assert.deepEqual(failing, []);
  });
});
