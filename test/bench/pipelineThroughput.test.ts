import { strict as assert } from 'node:assert';
import { parseOptions } from '../../bench/pipeline/options.js';
import { checkStalenessAccepted, stalenessOverrides } from '../../bench/pipeline/pipelineRun.js';
import { limitSpeedup, steadyThroughput } from '../../bench/pipeline/throughput.js';

const at = (step: number, seconds: number) => ({
  step,
  time: new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString(),
});

describe('bench:pipeline throughput', () => {
  it('counts (n - 1) steps over last - first, so the time before the first record (a fill) is left out', () => {
    const t = steadyThroughput([at(3, 30), at(1, 20), at(2, 25)]);
    assert.equal(t.secondsPerStep, 5);
    assert.equal(t.stepsPerHour, 720);
    assert.deepEqual(t.stepIntervalsS, [5, 5]);
  });

  it('refuses fewer than two records', () => {
    assert.throws(() => steadyThroughput([at(1, 0)]), /at least two step records/);
  });

  it('bounds the gain of overlapping by (R + T) / max(R, T)', () => {
    assert.equal(limitSpeedup(4, 4), 2);
    assert.equal(limitSpeedup(4, 2), 1.5);
    assert.equal(limitSpeedup(2, 8), 1.25);
  });

  it('passes training.maxStaleness only for staleness > 0', () => {
    assert.deepEqual(stalenessOverrides(0), []);
    assert.deepEqual(stalenessOverrides(2), ['training.maxStaleness=2']);
    assert.doesNotThrow(() => checkStalenessAccepted([0]));
  });

  it('always measures staleness 0, the baseline of speedup, and names a bad option', () => {
    assert.deepEqual(parseOptions(['--staleness', '2,1'])?.staleness, [0, 1, 2]);
    assert.deepEqual(parseOptions(['--quick', '--staleness', '0'])?.staleness, [0]);
    assert.equal(parseOptions(['--quick'])?.steps, 6);
    assert.throws(() => parseOptions(['--ratios', '1,x']), /--ratios: "x"/);
    assert.equal(parseOptions(['--help']), null);
  });
});
