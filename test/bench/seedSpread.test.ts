import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { formatMeanCi, meanCi } from '../../bench/learning/seedSpread.js';
import { parityOver, settingName } from '../../bench/learning/seedParity.js';

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

describe('learning parity over seeds (issue 46)', () => {
  const runs = (...last3: number[]) => last3.map((v, i) => ({ seed: i + 1, last3: v }));
  it("a setting whose mean lies within the synchronous run's spread between seeds is at parity, counting the seeds within", () => {
    const p = parityOver(runs(0.68, 0.7, 0.7), runs(0.63, 0.7, 0.7));
    assert.deepEqual(p.spread, { min: 0.68, max: 0.7 });
    assert.ok(Math.abs(p.mean - 0.6766666) < 1e-6);
    assert.equal(p.withinSpread, false, 'a mean below the lowest seed is not');
    assert.equal(p.seedsWithin, 2);
    assert.equal(parityOver(runs(0.68, 0.7, 0.7), runs(0.69, 0.7, 0.7)).withinSpread, true);
  });
  it('a synchronous run at the ceiling on every seed has a spread of zero: only the ceiling is within it', () => {
    assert.equal(parityOver(runs(0.7, 0.7), runs(0.7, 0.699)).withinSpread, false);
    assert.equal(parityOver(runs(0.7, 0.7), runs(0.7, 0.7)).withinSpread, true);
  });
  it('refuses runs of different seeds', () => {
    assert.throws(() => parityOver(runs(0.7, 0.7), runs(0.7)), /the same seeds/);
  });
  it('names a setting by its credit, staleness and first-finished steps', () => {
    assert.equal(settingName({ credit: 'final', staleness: 1, stepDialogues: 'firstFinished' }), 'final S=1 ff');
    assert.equal(settingName({ credit: 'turn' }), 'turn');
  });
});

describe('npm run bench:learning:seeds (bench/learning/acrossSeeds.ts)', function () {
  this.timeout(60_000);
  it('judges each overlapping setting against the synchronous run of its credit mode', () => {
    const dir = mkdtempSync(join(tmpdir(), 'attune-seeds-'));
    try {
      const write = (seed: number, sync: number, ff: number) => {
        const file = join(dir, `seed-${seed}.json`);
        const run = (staleness: number, stepDialogues: string, last3: number) => ({
          credit: 'final',
          staleness,
          stepDialogues,
          step90: 10,
          last3,
        });
        const runs = [run(0, 'planned', sync), run(1, 'firstFinished', ff)];
        writeFileSync(file, JSON.stringify({ seed, steps: 16, runs }));
        return file;
      };
      const out = join(dir, 'seeds.json');
      const printed = execFileSync(
        process.execPath,
        ['--import', 'tsx', 'bench/learning/acrossSeeds.ts', '--out', out, write(1, 0.68, 0.62), write(2, 0.7, 0.7)],
        { cwd: REPO_ROOT, encoding: 'utf8' },
      );
      const { parity } = JSON.parse(readFileSync(out, 'utf8')) as {
        parity: { setting: string; against: string; withinSpread: boolean; seedsWithin: number }[];
      };
      assert.deepEqual(
        parity.map((p) => [p.setting, p.against, p.withinSpread, p.seedsWithin]),
        [['final S=1 ff', 'final S=0', false, 1]],
      );
      assert.match(
        printed,
        /parity final S=1 ff against final S=0: last-3 mean 0\.660, NOT within .* 0\.680-0\.700; 1 of 2/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

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
