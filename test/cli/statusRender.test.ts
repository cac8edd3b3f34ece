import assert from 'node:assert/strict';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { addTurnUsage, emptyTotals, type TranscriptTurn } from '../../src/core/transcript.js';
import { rateLimitWaitsText, renderStatus } from '../../src/cli/render/status.js';
import type { TrainingStatus } from '../../src/workflows/training.js';

/** A run in its third step, the status fields every test here shares. */
const STATUS = {
  runName: 'r',
  algorithm: 'grpo',
  step: 3,
  steps: 4,
  phase: 'rollouts',
  paused: false,
  stopRequested: false,
  version: 'r@2',
  rollouts: { done: 1, failed: 0, inFlight: 1, total: 4 },
  blockedReason: null,
  etaMs: null,
  live: {},
};

/** Its last step's metrics, as far as the status shows them. */
const LAST_STEP = {
  run: 'r',
  step: 2,
  reward: { mean: 0.5, std: 0, min: 0, max: 1 },
  successRate: 0,
  failureRate: 0,
  meanTurns: 2,
  trainer: { loss: 0, kl: 0, entropy: 0, grad_norm: 0, seconds: 1 },
};

describe('rate-limit waits in attune status', () => {
  it("a dialogue's totals count each call that waited, per endpoint", () => {
    const tokens = emptyTotals();
    const usage = (wait?: number) => ({ prompt: 1, completion: 1, ...(wait ? { rateLimitWaitMs: wait } : {}) });
    addTurnUsage(tokens, {
      policy: { usage: usage(100) },
      analysis: { usage: usage(30) },
      userReply: { usage: usage() },
    } as TranscriptTurn);
    addTurnUsage(tokens, { policy: { usage: usage() }, analysis: null, userReply: null } as TranscriptTurn);
    assert.deepEqual(tokens.rateLimitWaits, { policy: { waits: 1, waitMs: 100 }, simulator: { waits: 1, waitMs: 30 } });
    const none = emptyTotals();
    addTurnUsage(none, { policy: { usage: usage() }, analysis: null, userReply: null } as TranscriptTurn);
    assert.equal('rateLimitWaits' in none, false);
  });

  it("shows the last step's waits per endpoint", () => {
    const waits = { policy: { waits: 3, seconds: 1.25 }, simulator: { waits: 1, seconds: 0.5 } };
    assert.equal(rateLimitWaitsText(waits), 'policy waited 3 times, 1.3 s; simulator waited 1 time, 0.5 s');
    const lastMetrics = { ...LAST_STEP, rateLimitWaits: waits } as unknown as StepMetricsRecord;
    const status = { ...STATUS, lastMetrics } as unknown as TrainingStatus;
    assert.match(
      renderStatus(status),
      /^rate-limit waits {4}policy waited 3 times, 1\.3 s; simulator waited 1 time, 0\.5 s \(step 2\)$/m,
    );
  });

  it('counts the dialogues waiting at a failed call and says how to list them', () => {
    const status = {
      runName: 'r',
      algorithm: 'grpo',
      step: 1,
      steps: 2,
      phase: 'waiting-for-operator',
      paused: false,
      stopRequested: false,
      version: 'r@0',
      rollouts: { done: 0, failed: 0, inFlight: 4, total: 4, waiting: 3 },
      blockedReason: '3 dialogues wait for an operator at a failed LLM call',
      lastMetrics: null,
      etaMs: null,
      live: {},
    } as unknown as TrainingStatus;
    const shown = renderStatus(status);
    assert.match(shown, /4 in flight \(3 waiting at a failed call: attune rollouts list r --waiting\), of 4/);
    assert.doesNotMatch(
      renderStatus({ ...status, rollouts: { done: 0, failed: 0, inFlight: 4, total: 4 } }),
      /waiting at/,
    );
  });

  it('names a step published and recorded beside the next one, and nothing when none is', () => {
    const finishing = { step: 4, version: 'r@4' };
    assert.match(
      renderStatus({ ...STATUS, finishing } as unknown as TrainingStatus),
      /^beside the next step +step 4 \(r@4\) is published and recorded while step 5 gathers and trains$/m,
    );
    assert.doesNotMatch(renderStatus(STATUS as unknown as TrainingStatus), /beside the next step/);
  });

  it("shows the last step's publish latency, or why there is none", () => {
    const metrics = (publishLatencyMs?: number | null, commitToAnswerMs?: number) =>
      ({
        ...LAST_STEP,
        ...(publishLatencyMs !== undefined ? { publishLatencyMs } : {}),
        ...(commitToAnswerMs !== undefined ? { commitToAnswerMs } : {}),
      }) as unknown as StepMetricsRecord;
    const render = (m: StepMetricsRecord) => renderStatus({ ...STATUS, lastMetrics: m } as unknown as TrainingStatus);
    assert.match(
      render(metrics(64)),
      /^publish latency +64 ms from the publish's start to r@2's first token \(step 2\)$/m,
    );
    assert.match(
      render(metrics(64, 2.5)),
      /^publish latency +64 ms from the publish's start to r@2's first token \(step 2\); the trainer answered 2\.5 ms after its commit$/m,
    );
    assert.match(render(metrics(null)), /^publish latency +not measured \(the trainer serves its own weights\)$/m);
    assert.doesNotMatch(render(metrics()), /publish latency/);
  });
});
