import { strict as assert } from 'node:assert';
import { parseOptions, RELOAD_GBPS_MEASURED } from '../../bench/pipeline/options.js';
import { dialogueTurns, longTailedBehaviour, LONG_TAIL_TURNS } from '../../bench/pipeline/longTail.js';
import {
  checkStalenessAccepted,
  stalenessOverrides,
  stepDialoguesOverrides,
} from '../../bench/pipeline/pipelineRun.js';
import { loadConfig } from '../../src/config/load.js';
import type { CallContext } from '../support/fakeOpenAI.js';
import { limitSpeedup, steadyThroughput, trainerBoundSpeedup } from '../../bench/pipeline/throughput.js';

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

  it("bounds any overlap by the synchronous step over the trainer's: 2 + P / T at T = R", () => {
    // R = T = 12 s, a 2 s publish: the synchronous step is 26 s.
    assert.equal(trainerBoundSpeedup(26, 12).toFixed(3), (2 + 2 / 12).toFixed(3));
    assert.equal(trainerBoundSpeedup(18, 6), 3);
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

  it("gives full weights a reload that grows with the model's size: bf16 bytes at the measured rate, or at --reload-gbps", () => {
    const byDefault = parseOptions([])!;
    assert.deepEqual([byDefault.reloadMs, byDefault.modelParams, byDefault.reloadGbps], [2000, null, null]);
    const seven = parseOptions(['--model-params', '7B'])!;
    assert.equal(seven.modelParams, 7e9);
    assert.equal(seven.reloadMs, Math.round((14e9 / (RELOAD_GBPS_MEASURED * 1e9)) * 1000));
    const small = parseOptions(['--model-params', '135M'])!.reloadMs;
    assert.ok(small < 2000 && seven.reloadMs > 20 * small, `${small} ms against ${seven.reloadMs} ms`);
    assert.equal(parseOptions(['--model-params', '1.5B', '--reload-gbps', '2'])!.reloadMs, 1500);
    assert.throws(() => parseOptions(['--model-params', '7X']), /--model-params: .*7X/);
    assert.throws(() => parseOptions(['--model-params', '7B', '--reload-ms', '5']), /give one/);
    assert.throws(() => parseOptions(['--reload-gbps', '1']), /only with --model-params/);
  });

  it('takes the first finished dialogues only when asked, with its own maxInFlight, in a config the schema accepts', () => {
    assert.deepEqual(stepDialoguesOverrides('planned', 16), []);
    const ff = stepDialoguesOverrides('firstFinished', 16);
    assert.deepEqual(ff, ['training.stepDialogues=firstFinished', 'training.maxInFlight=16']);
    const config = loadConfig({ env: {}, set: [...stalenessOverrides(1), ...ff] });
    assert.equal(config.training.stepDialogues, 'firstFinished');
    const options = parseOptions(['--quick'])!;
    assert.deepEqual(options.stepDialogues, ['planned', 'firstFinished']);
    assert.equal(options.inFlight, 8, "twice a step's dialogues");
    assert.equal(options.dialogues, 'fixed');
    assert.throws(() => parseOptions(['--step-dialogues', 'planned,last']), /--step-dialogues: "last"/);
    assert.throws(() => parseOptions(['--dialogues', 'short']), /--dialogues: "short"/);
  });

  it("draws long-tailed dialogues: 2 to 8 turns each, from a tag the policy's first reply carries, and call latencies with a long tail", () => {
    const turns = Array.from({ length: 400 }, (_, i) => dialogueTurns(String(i)));
    assert.equal(Math.min(...turns), LONG_TAIL_TURNS.min);
    assert.equal(Math.max(...turns), LONG_TAIL_TURNS.max);
    const behaviour = longTailedBehaviour(1000);
    const ctx = (
      role: CallContext['role'],
      turn: number,
      messages: { role: string; content: string }[],
      seed?: number,
    ) =>
      ({
        role,
        nth: 1,
        turn,
        last: messages.at(-1)?.content ?? '',
        persona: null,
        body: { messages, ...(seed !== undefined ? { seed } : {}) },
      }) as unknown as CallContext;
    const first = behaviour.policy!(ctx('policy', 0, [{ role: 'user', content: 'hi' }], 42));
    assert.match(first, /\[dialogue 42\]/);
    const history = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: first },
    ];
    const ends = dialogueTurns('42');
    assert.match(behaviour.reply!(ctx('reply', ends, history)), /Goodbye/);
    assert.doesNotMatch(behaviour.reply!(ctx('reply', ends - 1, history)), /Goodbye/);
    assert.match(behaviour.policy!(ctx('policy', 1, history, 7)), /\[dialogue 42\]/, 'later calls keep the tag');
    const latencies = Array.from({ length: 2000 }, (_, i) =>
      behaviour.latencyFor!(ctx('analysis', 1, [{ role: 'user', content: `x${i}` }])),
    );
    latencies.sort((a, b) => a - b);
    const median = latencies[1000]!;
    const p99 = latencies[1980]!;
    assert.ok(median > 850 && median < 1150, `median ${median}`);
    assert.ok(p99 > 3500 && p99 < 7000, `p99 ${p99}`);
  });
});
