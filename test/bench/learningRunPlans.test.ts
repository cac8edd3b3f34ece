import assert from 'node:assert/strict';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import {
  checkStaleness,
  multiplyPlans,
  stepDialoguesList,
  stepDialoguesOverrides,
  type RunPlan,
  type StaleRunPlan,
} from '../../bench/learning/runPlans.js';

const BASE: RunPlan = {
  name: 'learn-grpo-tiny',
  algorithm: 'grpo',
  model: 'tiny-random',
  simulator: 'rule-based user',
};

function plan(staleness: number, stepDialogues: 'planned' | 'firstFinished'): StaleRunPlan {
  return { ...BASE, name: 'run', staleness, credit: 'final', policyServer: 'trainer', stepDialogues };
}

/** Step records with only what checkStaleness reads. */
const records = (versions: string[]) =>
  versions.map((policyVersion, i) => ({ step: i + 1, policyVersion }) as StepMetricsRecord);

describe('bench:learning --step-dialogues: its runs and their staleness check', () => {
  it('multiplies the runs like --staleness, names first-finished ones -ff and skips them at staleness 0', () => {
    const { plans, skipped } = multiplyPlans([BASE], {
      policyServers: ['trainer'],
      stalenesses: [0, 1],
      stepDialogues: ['planned', 'firstFinished'],
      credits: ['final'],
    });
    assert.deepEqual(
      plans.map((p) => [p.name, p.staleness, p.stepDialogues]),
      [
        ['learn-grpo-tiny', 0, 'planned'],
        ['learn-grpo-tiny-stale1', 1, 'planned'],
        ['learn-grpo-tiny-stale1-ff', 1, 'firstFinished'],
      ],
    );
    assert.deepEqual(skipped, ['learn-grpo-tiny-ff']);
  });

  it('leaves no run for firstFinished alone at staleness 0', () => {
    const { plans } = multiplyPlans([BASE], {
      policyServers: ['trainer'],
      stalenesses: [0],
      stepDialogues: ['firstFinished'],
      credits: ['final'],
    });
    assert.deepEqual(plans, []);
  });

  it('parses the list and sends the overrides only for firstFinished', () => {
    assert.deepEqual(stepDialoguesList('planned, firstFinished'), ['planned', 'firstFinished']);
    assert.equal(stepDialoguesList('planned,planned'), null);
    assert.equal(stepDialoguesList('first'), null);
    assert.deepEqual(stepDialoguesOverrides('planned'), []);
    assert.deepEqual(stepDialoguesOverrides('firstFinished'), [
      'training.stepDialogues=firstFinished',
      'training.maxInFlight=16',
    ]);
  });

  it('planned runs: each step sampled exactly the version step-1-S', () => {
    checkStaleness(plan(1, 'planned'), records(['run@0', 'run@0', 'run@1']));
    assert.throws(() => checkStaleness(plan(1, 'planned'), records(['run@0', 'run@1'])), /not run@0/);
  });

  it('first-finished runs: the oldest version of each step lies within the bound and is no newer than step-1', () => {
    checkStaleness(plan(1, 'firstFinished'), records(['run@0', 'run@1', 'run@1', 'run@3']));
    assert.throws(
      () => checkStaleness(plan(1, 'firstFinished'), records(['run@0', 'run@0', 'run@0'])),
      /step 3 took a dialogue of run@0/,
    );
    assert.throws(() => checkStaleness(plan(1, 'firstFinished'), records(['run@1'])), /step 1/);
    assert.throws(() => checkStaleness(plan(1, 'firstFinished'), records(['0'])), /step 1/);
  });
});
