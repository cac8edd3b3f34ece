import assert from 'node:assert/strict';
import { meanStaleness, offPolicyFigures, stalenessText } from '../../src/core/offPolicyFigures.js';

describe("a step's off-policy figures", () => {
  it('orders staleness keys numerically and keeps reported figures', () => {
    const f = offPolicyFigures({
      staleness_histogram: { '10': 1, '2': 3, '0': 4 },
      is_weight_mean: 1.5,
      is_weight_max: 3,
      is_truncated_share: 0,
    });
    assert.deepEqual(Object.entries(f.stalenessHistogram ?? {}), [
      ['0', 4],
      ['2', 3],
      ['10', 1],
    ]);
    assert.deepEqual([f.isWeightMean, f.isWeightMax, f.isTruncatedShare], [1.5, 3, 0]);
    assert.equal(stalenessText(f.stalenessHistogram), '0:4 2:3 10:1');
    assert.equal(meanStaleness(f.stalenessHistogram), (0 * 4 + 2 * 3 + 10) / 8);
  });

  it('reads absent, null and malformed figures as not reported', () => {
    const none = { stalenessHistogram: null, isWeightMean: null, isWeightMax: null, isTruncatedShare: null };
    assert.deepEqual(offPolicyFigures(undefined), none);
    assert.deepEqual(offPolicyFigures({ loss: 1 }), none);
    assert.deepEqual(
      offPolicyFigures({ is_weight_mean: null, is_weight_max: Number.NaN, is_truncated_share: null }),
      none,
    );
    for (const bad of [{}, [], { x: 1 }, { '1': 'two' }, { '-1': 3 }])
      assert.equal(offPolicyFigures({ staleness_histogram: bad as Record<string, number> }).stalenessHistogram, null);
    assert.equal(stalenessText(null), null);
    assert.equal(meanStaleness(null), null);
  });

  it('writes one staleness as "k: n"', () => {
    assert.equal(stalenessText({ '1': 8 }), '1: 8');
    assert.equal(meanStaleness({ '1': 8 }), 1);
  });
});
