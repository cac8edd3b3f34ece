import assert from 'node:assert/strict';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import {
  completeStep,
  initialTrainingState,
  runIsOver,
  trainingResult,
  trainingStatus,
  type TrainingState,
} from '../../src/core/training/trainingState.js';

const PROGRESS = { total: 4, done: 1, failed: 0, inFlight: 2 };
const view = (state: TrainingState, phase: Parameters<typeof trainingStatus>[0]['phase'], steps = 3) =>
  trainingStatus({ runName: 'run', algorithm: 'grpo', steps, state, phase, progress: PROGRESS, blockedReason: null });

describe('training state and status', () => {
  it('a new run starts at step 1 on the base version', () => {
    const state = initialTrainingState('base');
    assert.deepEqual(state, {
      step: 1,
      version: 'base',
      initialized: false,
      paused: false,
      stopRequested: false,
      live: {},
      stepDurationsMs: [],
      lastMetrics: null,
    });
    assert.equal(runIsOver(state, 1), false);
    assert.equal(runIsOver({ ...state, step: 2 }, 1), true);
    assert.equal(runIsOver({ ...state, stopRequested: true }, 1), true);
  });

  it('a completed step moves the run on and keeps the last ten durations', () => {
    const state = initialTrainingState('base');
    const record = { step: 1 } as StepMetricsRecord;
    for (let step = 1; step <= 12; step++) completeStep(state, step, record, step * 1000);
    assert.equal(state.step, 13);
    assert.equal(state.lastMetrics, record);
    assert.deepEqual(
      state.stepDurationsMs,
      [3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((s) => s * 1000),
    );
  });

  it('the ETA counts the step under way until the run has ended, and is null before any step', () => {
    const state = initialTrainingState('base');
    assert.equal(view(state, 'rollouts').etaMs, null);
    completeStep(state, 1, { step: 1 } as StepMetricsRecord, 1000);
    completeStep(state, 2, { step: 2 } as StepMetricsRecord, 3000);
    // Step 3 of 3 under way: one step left at the mean of 2 s.
    assert.equal(view(state, 'rollouts').etaMs, 2000);
    assert.equal(view(state, 'done', 2).etaMs, 0);
    const status = view(state, 'optimizing');
    assert.deepEqual(status.rollouts, PROGRESS);
    assert.notEqual(status.rollouts, PROGRESS, 'a copy, not the live counts');
    assert.deepEqual([status.step, status.steps, status.version], [3, 3, 'base']);
  });

  it("the result reports the steps applied and the run's version", () => {
    const state = { ...initialTrainingState('base'), step: 3, version: 'run@2' };
    assert.deepEqual(trainingResult('run', state, true), {
      runName: 'run',
      stepsApplied: 2,
      stopped: true,
      version: 'run@2',
      lastMetrics: null,
    });
  });
});
