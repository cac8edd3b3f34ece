import assert from 'node:assert/strict';
import {
  formatDuration,
  formatProgress,
  progressBar,
  ProgressDisplay,
  RateEstimate,
} from '../../src/cli/render/progress.js';

describe('progress rendering', () => {
  it('draws a bar, counts and an ETA', () => {
    assert.equal(progressBar(0, 8, 8), '[--------]');
    assert.equal(progressBar(3, 8, 8), '[###-----]');
    assert.equal(progressBar(9, 8, 8), '[########]');
    assert.equal(progressBar(1, 0, 4), '[----]');
    assert.equal(formatDuration(5_400), '5s');
    assert.equal(formatDuration(80_000), '1m20s');
    assert.equal(formatDuration(3_900_000), '1h05m');
    assert.equal(
      formatProgress({ label: 'step 2/4', done: 3, total: 8, unit: 'dialogues', etaMs: 80_000, detail: 'rollouts' }, 8),
      'step 2/4 [###-----] 3/8 dialogues  ETA 1m20s  rollouts',
    );
    assert.equal(
      formatProgress({ label: 'eval', done: 0, total: 2, unit: 'dialogues', etaMs: null }, 4),
      'eval [----] 0/2 dialogues  ETA -',
    );
  });

  it('estimates the ETA from the observed rate, and starts again when the count falls', () => {
    const rate = new RateEstimate();
    assert.equal(rate.etaMs(10), null);
    rate.observe(0, 0);
    assert.equal(rate.etaMs(10), null, 'one sample has no rate');
    rate.observe(4_000, 2);
    assert.equal(rate.etaMs(10), 16_000, '2 done in 4 s: 8 more take 16 s');
    rate.observe(5_000, 0);
    assert.equal(rate.etaMs(10), null);
    rate.reset();
    assert.equal(rate.etaMs(10), null);
  });

  it('redraws one line on a terminal and writes plain lines elsewhere, once per change', () => {
    const tty: string[] = [];
    const onTerminal = new ProgressDisplay({ write: (t: string) => tty.push(t), isTTY: true });
    onTerminal.show('a');
    onTerminal.show('a');
    onTerminal.show('b');
    onTerminal.done();
    assert.deepEqual(tty, ['\r\u001b[2Ka', '\r\u001b[2Kb', '\n']);
    const plain: string[] = [];
    const elsewhere = new ProgressDisplay({ write: (t: string) => plain.push(t) });
    elsewhere.show('a');
    elsewhere.show('a');
    elsewhere.show('b');
    elsewhere.done();
    assert.deepEqual(plain, ['a\n', 'b\n']);
  });
});
