import assert from 'node:assert/strict';
import { guardPauseOf, guardrailTable, type GuardedRunResult } from '../../bench/learning/guardrailPause.js';
import type { TrainingStatus } from '../../src/core/training/trainingState.js';
import type { GuardTrip } from '../../src/core/training/guardrails.js';

const trip = (action: 'warn' | 'pause', step: number, rule = 'empty-replies'): GuardTrip => ({
  rule,
  action,
  step,
  figures: { emptyShare: 0.5, limit: 0.2 },
  message: `guardrail ${rule} at step ${step}: emptyShare 0.5 above 0.2`,
});

/** A status as the training workflow reports it; only the fields the reading looks at vary. */
const status = (phase: TrainingStatus['phase'], guardrails?: TrainingStatus['guardrails']): TrainingStatus =>
  ({
    runName: 'r',
    algorithm: 'grpo',
    step: 7,
    steps: 30,
    phase,
    paused: false,
    stopRequested: false,
    version: 'r@5',
    rollouts: {},
    blockedReason: null,
    lastMetrics: null,
    etaMs: null,
    live: {},
    ...(guardrails ? { guardrails } : {}),
  }) as TrainingStatus;

describe('bench:guardrails reads a pause from the run status', () => {
  it('a run waiting on a pausing rule gives that rule and the step that tripped it', () => {
    assert.deepEqual(
      guardPauseOf(
        status('waiting-for-operator', {
          warnings: [trip('warn', 3, 'reply-length-doubled')],
          pausedBy: trip('pause', 6),
        }),
      ),
      { step: 6, rule: 'empty-replies' },
    );
  });

  it('warnings, an operator pause, or a run that went on after the pause are no pause', () => {
    assert.equal(guardPauseOf(status('rollouts', { warnings: [trip('warn', 3)], pausedBy: null })), null);
    assert.equal(guardPauseOf(status('waiting-for-operator')), null, 'waiting for another reason');
    assert.equal(guardPauseOf(status('rollouts')), null);
    assert.equal(guardPauseOf(status('paused', { warnings: [], pausedBy: null })), null);
    assert.equal(guardPauseOf(status('stopped', { warnings: [], pausedBy: trip('pause', 6) })), null, 'stopped');
  });

  it('the table gives the hacked run its pause and counts the healthy runs that paused', () => {
    const run = (kind: 'hacked' | 'healthy', seed: number, pause: GuardedRunResult['pause']): GuardedRunResult => ({
      kind,
      task: kind === 'hacked' ? 'hackable' : 'brevity',
      seed,
      stepsRun: pause ? pause.step : 30,
      pause,
      emptyShareFirst: 0,
      emptyShareLast: pause ? 0.5 : 0,
      seconds: 100,
    });
    const lines = guardrailTable(
      [run('hacked', 1, { step: 9, rule: 'empty-replies' }), run('healthy', 1, null), run('healthy', 2, null)],
      30,
    );
    assert.ok(lines.includes('hacked (seed 1): paused at step 9 by empty-replies'), lines.join('\n'));
    assert.ok(lines.includes('healthy: paused in 0 of 2 runs (target 0)'), lines.join('\n'));
    const withPause = guardrailTable([run('healthy', 3, { step: 4, rule: 'empty-replies' })], 30);
    assert.ok(withPause.includes('healthy: paused in 1 of 1 runs (target 0)'), withPause.join('\n'));
  });
});
