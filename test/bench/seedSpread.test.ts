import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { formatMeanCi, meanCi } from '../../bench/learning/seedSpread.js';

describe('bench:learning over seeds: a mean with its 95 % interval', () => {
  it("uses Student's t for the seeds' count: three values 1, 2, 3 give 2 ± 2.48", () => {
    const m = meanCi([1, 2, 3]);
    assert.equal(m.mean, 2);
    assert.ok(Math.abs(m.ci95! - 4.303 / Math.sqrt(3)) < 1e-9, String(m.ci95));
    assert.equal(formatMeanCi(m, 2), '2.00 ± 2.48');
  });
  it('gives no interval for one value', () => {
    assert.deepEqual(meanCi([5]), { n: 1, mean: 5, ci95: null });
    assert.equal(formatMeanCi(meanCi([5]), 1), '5.0');
  });
});

describe('npm run bench:learning:seeds (bench/learning/acrossSeeds.ts)', function () {
  this.timeout(60_000);
  it('reads one results file per seed and writes each credit mode over the seeds; a run that never reached 90 % counts as steps + 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'attune-seeds-'));
    try {
      const write = (seed: number, finalStep: number | null, turnStep: number) => {
        const file = join(dir, `seed-${seed}.json`);
        const runs = [
          { credit: 'final', step90: finalStep, last3: 0.5 + seed / 100 },
          { credit: 'turn', step90: turnStep, last3: 0.6 },
        ];
        writeFileSync(file, JSON.stringify({ seed, steps: 16, task: 'turn-differentiated', runs }));
        return file;
      };
      const files = [write(1, 10, 4), write(2, null, 6)];
      const out = join(dir, 'seeds.json');
      execFileSync(process.execPath, ['--import', 'tsx', 'bench/learning/acrossSeeds.ts', '--out', out, ...files], {
        cwd: REPO_ROOT,
      });
      const { task, credits } = JSON.parse(readFileSync(out, 'utf8')) as {
        task: string;
        credits: { credit: string; step90: { mean: number }; unreached: number; seeds: number[] }[];
      };
      assert.equal(task, 'turn-differentiated');
      assert.deepEqual(
        credits.map((c) => [c.credit, c.step90.mean, c.unreached, c.seeds]),
        [
          ['final', 13.5, 1, [1, 2]],
          ['turn', 5, 0, [1, 2]],
        ],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
