import assert from 'node:assert/strict';
import type { RolloutSettings } from '../../src/core/rolloutSettingsSchema.js';
import { stableHash } from '../../src/core/seeds.js';
import { scenariosForStep } from '../../src/core/training/scenarioSchedule.js';
import {
  evaluatesAfterStep,
  planStepRollouts,
  rolloutAttempt,
  stepEvaluationId,
  stepRolloutSettings,
} from '../../src/core/training/stepPlan.js';

const IDS = ['a', 'b', 'c'];
const RUN = { runName: 'run', seed: 7, scenariosPerStep: 2, samplesPerScenario: 2 };

describe('planning a training step', () => {
  it('plans samplesPerScenario dialogues per chosen scenario, with ids and groups from (run, step, position, k)', () => {
    const chosen = scenariosForStep(IDS, 7, 3, 2).ids;
    const planned = planStepRollouts(RUN, 3, IDS);
    assert.deepEqual(
      planned.map((p) => [p.rolloutId, p.scenarioId, p.group]),
      chosen.flatMap((id, position) =>
        [0, 1].map((k) => [`run--s3--${position}-${id}--k${k}`, id, `s3-${position}-${id}`]),
      ),
    );
    assert.equal(planned[3]!.seed, stableHash('7:3:1:1') % 2_147_483_647);
  });

  it('is the same plan for a retried or resumed step, and a different one for another step or seed', () => {
    assert.deepEqual(planStepRollouts(RUN, 2, IDS), planStepRollouts(RUN, 2, [...IDS].reverse()));
    assert.notDeepEqual(planStepRollouts(RUN, 2, IDS), planStepRollouts(RUN, 3, IDS));
    const otherSeed = planStepRollouts({ ...RUN, seed: 8 }, 2, IDS).map((p) => p.seed);
    assert.notDeepEqual(
      planStepRollouts(RUN, 2, IDS).map((p) => p.seed),
      otherSeed,
    );
  });

  it('keeps a scenario that appears twice in one step (epoch boundary) in two groups', () => {
    // 2 scenarios, 4 per step: the step spans two epochs, so each scenario comes twice.
    const planned = planStepRollouts({ ...RUN, samplesPerScenario: 1, scenariosPerStep: 4 }, 1, ['x', 'y']);
    const groups = new Set(planned.map((p) => p.group));
    assert.equal(groups.size, 4);
    assert.equal(new Set(planned.map((p) => p.rolloutId)).size, 4);
  });

  it('gives a retry attempt its own workflow id and seed', () => {
    const [p] = planStepRollouts(RUN, 1, IDS);
    assert.deepEqual(rolloutAttempt(p!, 0), { rolloutId: p!.rolloutId, seed: p!.seed });
    assert.deepEqual(rolloutAttempt(p!, 2), { rolloutId: `${p!.rolloutId}--a2`, seed: p!.seed + 2 });
  });

  it("samples from the step's version, at the operator's temperature when one was set", () => {
    const rollout = {
      maxTurns: 2,
      policy: { model: 'base', temperature: 1, maxTokens: 8 },
    } as unknown as RolloutSettings;
    assert.deepEqual(stepRolloutSettings(rollout, 'run@2', undefined).policy, {
      model: 'run@2',
      temperature: 1,
      maxTokens: 8,
    });
    assert.equal(stepRolloutSettings(rollout, 'run@2', 0.5).policy.temperature, 0.5);
    assert.equal(rollout.policy.model, 'base', 'the run settings are left as they are');
  });

  it('evaluates every evalEvery steps and after the last, never with evalEvery 0', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5].filter((step) => evaluatesAfterStep(step, 2, 5)),
      [2, 4, 5],
    );
    assert.equal(evaluatesAfterStep(5, 0, 5), false);
    assert.equal(stepEvaluationId('run', 4), 'run-eval-s4');
  });
});
