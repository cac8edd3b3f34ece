import assert from 'node:assert/strict';
import { planStepRollouts } from '../../src/core/training/stepPlan.js';
import { minGroupSize, StepRolloutOutcomes } from '../../src/core/training/stepRollouts.js';
import type { RolloutSummary } from '../../src/core/transcript.js';

// Two scenarios, two samples each: planned[0..1] are one group, planned[2..3] the other.
const planned = planStepRollouts({ runName: 'run', seed: 1, scenariosPerStep: 2, samplesPerScenario: 2 }, 1, [
  'a',
  'b',
]);
const summary = (rolloutId: string) => ({ rolloutId, artifact: `rollouts/${rolloutId}.json` }) as RolloutSummary;

describe("a step's rollout outcomes", () => {
  it('GRPO with several samples needs two survivors per group; PPO and single samples need one', () => {
    assert.equal(minGroupSize('grpo', 4), 2);
    assert.equal(minGroupSize('grpo', 1), 1);
    assert.equal(minGroupSize('ppo', 1), 1);
  });

  it('counts done and failed, and the last attempt of a retried dialogue counts', () => {
    const outcomes = new StepRolloutOutcomes(planned);
    outcomes.succeeded(planned[0]!.rolloutId, summary(planned[0]!.rolloutId));
    outcomes.failed(planned[1]!.rolloutId, 'first');
    outcomes.failed(planned[2]!.rolloutId, 'second');
    assert.deepEqual([outcomes.doneCount, outcomes.failedCount], [1, 2]);
    assert.deepEqual(
      outcomes.failedRollouts().map((p) => p.rolloutId),
      [planned[1]!.rolloutId, planned[2]!.rolloutId],
    );
    outcomes.succeeded(planned[1]!.rolloutId, summary(planned[1]!.rolloutId));
    assert.deepEqual([outcomes.doneCount, outcomes.failedCount], [2, 1]);
  });

  it('waits for an operator above maxFailedShare and says why, with the first error still standing', () => {
    const outcomes = new StepRolloutOutcomes(planned);
    outcomes.failed(planned[0]!.rolloutId, 'boom 0');
    assert.equal(outcomes.tooManyFailed(0.25), false, '1 of 4 is not above 25%');
    outcomes.failed(planned[3]!.rolloutId, 'boom 3');
    assert.equal(outcomes.tooManyFailed(0.25), true);
    assert.equal(outcomes.blockedReason(0.25), '2 of 4 rollouts failed (limit 25%); first error: boom 0');
    outcomes.succeeded(planned[0]!.rolloutId, summary(planned[0]!.rolloutId));
    outcomes.failed(planned[3]!.rolloutId, 'boom 3 again');
    assert.equal(outcomes.blockedReason(0.5), '1 of 4 rollouts failed (limit 50%); first error: boom 3 again');
  });

  it('sends whole groups with enough survivors to the optimizer, with their artifacts and groups', () => {
    const outcomes = new StepRolloutOutcomes(planned);
    for (const p of planned.slice(0, 3)) outcomes.succeeded(p.rolloutId, summary(p.rolloutId));
    outcomes.failed(planned[3]!.rolloutId, 'x');
    const survivors = outcomes.survivors(2);
    assert.deepEqual(
      survivors.kept.map((s) => s.artifact),
      [`rollouts/${planned[0]!.rolloutId}.json`, `rollouts/${planned[1]!.rolloutId}.json`],
    );
    assert.deepEqual(survivors.optimizerRollouts, [
      { artifact: `rollouts/${planned[0]!.rolloutId}.json`, group: planned[0]!.group },
      { artifact: `rollouts/${planned[1]!.rolloutId}.json`, group: planned[1]!.group },
    ]);
    assert.deepEqual(
      survivors.decision.dropped.map((r) => r.rolloutId),
      [planned[2]!.rolloutId],
    );
    assert.equal(survivors.decision.failed, 1);
    assert.equal(outcomes.survivors(1).kept.length, 3);
  });

  it('carries its outcomes across continue-as-new: a snapshot restores the same counts, first error and survivors', () => {
    const outcomes = new StepRolloutOutcomes(planned);
    outcomes.failed(planned[3]!.rolloutId, `first ${'!'.repeat(400)}`);
    outcomes.succeeded(planned[0]!.rolloutId, {
      ...summary(planned[0]!.rolloutId),
      reward: 0.5,
      turns: 2,
      outcome: 'success',
    });
    outcomes.failed(planned[1]!.rolloutId, `second ${'?'.repeat(400)}`);
    const snapshot = JSON.parse(JSON.stringify(outcomes.snapshot())) as ReturnType<typeof outcomes.snapshot>;
    const restored = StepRolloutOutcomes.restored(planned, snapshot);
    assert.deepEqual([restored.doneCount, restored.failedCount], [1, 2]);
    assert.equal(restored.firstError, outcomes.firstError, 'the first error is carried whole');
    assert.equal(restored.blockedReason(0.25).length, outcomes.blockedReason(0.25).length);
    assert.ok(snapshot.errors[1]![1].length <= 300, 'later errors are cut');
    assert.deepEqual(restored.survivors(1), outcomes.survivors(1));
    assert.deepEqual(
      restored.failedRollouts().map((p) => p.rolloutId),
      outcomes.failedRollouts().map((p) => p.rolloutId),
    );
    assert.equal(restored.has(planned[2]!.rolloutId), false);
    assert.throws(
      () => StepRolloutOutcomes.restored(planned.slice(0, 2), snapshot),
      /the carried step names dialogue 3 of a plan of 2/,
    );
  });
});
