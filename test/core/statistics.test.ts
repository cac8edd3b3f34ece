import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterBootstrapInterval, pooledMean, quantile } from '../../src/core/statistics/bootstrap.js';
import { pairedDifference } from '../../src/core/statistics/pairedDifference.js';
import { seededRandom } from '../../src/core/seededRandom.js';
import { signFlipPValue } from '../../src/core/statistics/signFlipTest.js';
import { ATTUNE_VERSION } from '../../src/core/version.js';

const singletons = (values: number[]) => values.map((v) => [v]);

describe('core: evaluation statistics', () => {
  it('the PRNG is seeded: the same seed gives the same stream, in [0, 1)', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const xs = Array.from({ length: 1000 }, () => a());
    assert.deepEqual(
      xs,
      Array.from({ length: 1000 }, () => b()),
    );
    assert.ok(xs.every((x) => x >= 0 && x < 1));
    assert.notDeepEqual(xs.slice(0, 5), Array.from({ length: 5 }, seededRandom(8)));
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    assert.ok(Math.abs(mean - 0.5) < 0.05, `mean ${mean}`);
  });

  it('quantiles interpolate between order statistics', () => {
    assert.equal(quantile([1, 2, 3, 4, 5], 0.5), 3);
    assert.equal(quantile([1, 2, 3, 4], 0.5), 2.5);
    assert.equal(quantile([0, 10], 0.025), 0.25);
    assert.equal(quantile([4], 0.975), 4);
  });

  it('all-equal scores give a zero-width interval at the score', () => {
    assert.deepEqual(clusterBootstrapInterval(singletons([48, 48, 48, 48])), { low: 48, high: 48 });
    assert.deepEqual(
      clusterBootstrapInterval([
        [30, 30],
        [30, 30],
      ]),
      { low: 30, high: 30 },
    );
  });

  it('the interval holds the mean, is deterministic, and narrows with more scenarios', () => {
    const values = Array.from({ length: 40 }, (_, i) => (i * 37) % 101);
    const wide = clusterBootstrapInterval(singletons(values.slice(0, 10)));
    const again = clusterBootstrapInterval(singletons(values.slice(0, 10)));
    const narrow = clusterBootstrapInterval(singletons(values));
    assert.deepEqual(wide, again);
    const mean = pooledMean(singletons(values));
    assert.ok(narrow.low < mean && mean < narrow.high);
    assert.ok(narrow.high - narrow.low < wide.high - wide.low);
    // Normal theory: about mean +- 1.96 sd / sqrt(n); the bootstrap agrees within 15 %.
    const sd = Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / values.length);
    const expected = 2 * 1.96 * (sd / Math.sqrt(values.length));
    assert.ok(
      Math.abs(narrow.high - narrow.low - expected) / expected < 0.15,
      `${narrow.high - narrow.low} vs ${expected}`,
    );
  });

  it('resamples a scenario with its repeats: correlated repeats do not narrow the interval', () => {
    const scenarios = [10, 30, 50, 70, 90, 20, 40, 60];
    const once = clusterBootstrapInterval(singletons(scenarios));
    const repeated = clusterBootstrapInterval(scenarios.map((v) => [v, v, v, v]));
    assert.deepEqual(repeated, once);
  });

  it('sign-flip test: no difference gives p = 1, a constant shift gives p < 0.01, exactly 2/2^n', () => {
    assert.equal(signFlipPValue(singletons([0, 0, 0, 0, 0])), 1);
    assert.equal(signFlipPValue(singletons(Array(8).fill(5))), 2 / 256);
    assert.ok(signFlipPValue(singletons(Array(8).fill(5))) < 0.01);
    // Above 16 scenarios the test is sampled, and still finds the shift.
    const many = signFlipPValue(singletons(Array.from({ length: 30 }, (_, i) => 10 + (i % 3))));
    assert.ok(many < 0.001, String(many));
    assert.equal(signFlipPValue([]), 1);
    // Symmetric differences: no evidence.
    assert.ok(signFlipPValue(singletons([5, -5, 3, -3, 1, -1])) > 0.9);
  });

  it('paired difference: all equal is 0, [0, 0], p = 1, not significant; a large shift is significant', () => {
    const same = pairedDifference(['a', 'b', 'c'].map((cluster) => ({ cluster, a: 50, b: 50 })));
    assert.deepEqual(
      { d: same.difference, ci: same.ci, p: same.pValue, s: same.significant },
      { d: 0, ci: { low: 0, high: 0 }, p: 1, s: false },
    );
    const shifted = pairedDifference(
      Array.from({ length: 10 }, (_, i) => ({ cluster: `s${i}`, a: 30 + i, b: 50 + i + (i % 2) })),
    );
    assert.equal(shifted.difference, 20.5);
    assert.ok(shifted.pValue < 0.01);
    assert.ok(shifted.significant);
    assert.ok(shifted.ci.low >= 20 && shifted.ci.high <= 21);
    assert.equal(shifted.clusters, 10);
    const none = pairedDifference([]);
    assert.equal(none.pValue, 1);
    assert.equal(none.significant, false);
  });

  it("the version manifests record is package.json's", () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
    assert.equal(ATTUNE_VERSION, pkg.version);
  });
});
