import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { main } from '../../src/cli/main.js';
import { renderComparisonPage } from '../../src/report/comparisonPage.js';
import { writeComparisonReport } from '../../src/report/write.js';
import { EVAL_ID, RUN, stepRecord, storeEvaluation, storeRun } from './fixtures.js';

function fresh(): { store: FileArtifactStore; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'attune-compare-'));
  return { store: new FileArtifactStore(join(dir, 'artifacts')), dir };
}

describe('the comparison report (several runs and evaluations on one page)', () => {
  it('overlays one reward line per run and one score line per run or evaluation', () => {
    const other = [1, 2, 3].map((s) => ({
      ...stepRecord(s),
      run: 'other',
      reward: { ...stepRecord(s).reward, mean: 0.1 * s },
    }));
    const page = renderComparisonPage({
      targets: [
        { kind: 'run', name: RUN, steps: [stepRecord(1), stepRecord(2)], evaluations: [] },
        { kind: 'run', name: 'other', steps: other, evaluations: [] },
      ],
      generatedAt: 'now',
    });
    const reward = page.slice(page.indexOf('data-png="reward"'), page.indexOf('data-png="sentient-score"'));
    for (const name of [RUN, 'other'])
      assert.match(reward, new RegExp(`<span class="swatch line"[^>]*></span>${name}</span>`));
    assert.equal(reward.match(/<path class="line"/g)?.length, 2, 'two reward lines');
    assert.match(page, /<h1>grpo-demo · other<\/h1>/);
  });

  it('writes a run beside an evaluation: scores, goal types, and a missing target named', async () => {
    const { store, dir } = fresh();
    await storeRun(store);
    const nightly = await storeEvaluation(store, EVAL_ID);
    const result = await writeComparisonReport({
      store,
      targets: [RUN, EVAL_ID],
      outDir: join(dir, 'out'),
      png: false,
    });
    const page = readFileSync(result.html, 'utf8');
    const summary = page.slice(
      page.indexOf('class="compare-summary"'),
      page.indexOf('</table>', page.indexOf('class="compare-summary"')),
    );
    // The run is shown by its latest evaluation (step 4), the evaluation by itself.
    assert.match(summary, new RegExp(`<b>${RUN}</b> <span class="muted">run</span></td><td>${RUN}-eval-4`));
    assert.match(
      summary,
      new RegExp(`<b>${EVAL_ID}</b> <span class="muted">evaluation</span></td><td>${EVAL_ID}</td>`),
    );
    const goals = page.slice(page.indexOf('class="compare-goals"'));
    for (const goal of Object.keys(nightly.byGoalType)) assert.match(goals, new RegExp(`<tr><td>${goal}</td>`));
    assert.match(page, /stroke-dasharray/, 'the evaluation is a dashed level on the score chart');

    await assert.rejects(
      writeComparisonReport({ store, targets: [RUN, 'nobody'], outDir: join(dir, 'x'), png: false }),
      /no evaluation or run named "nobody": tried evaluations\/nobody\/evaluation\.json and runs\/nobody\/metrics\.jsonl/,
    );
  });

  it('attune report A B writes the comparison into --out', async () => {
    const { store, dir } = fresh();
    await storeRun(store);
    await storeEvaluation(store, EVAL_ID);
    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (out.push(String(chunk)), true)) as typeof process.stdout.write;
    let code: number;
    try {
      code = await main(['report', RUN, EVAL_ID, '--out', join(dir, 'cmp'), '--html-only', '--set', `home=${dir}`]);
    } finally {
      process.stdout.write = write;
    }
    assert.equal(code, 0);
    assert.match(out.join(''), new RegExp(`^comparison report of ${RUN}, ${EVAL_ID}\\nreport: .*cmp/index\\.html\\n$`));
  });
});
