import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { SIMULATOR_DIFFICULTIES, type SimulatorDifficulty } from '../../src/core/difficulty.js';
import {
  groupDifficulty,
  sharesAt,
  stepDifficulties,
  type DifficultyPhase,
} from '../../src/core/training/difficultyMix.js';
import { difficultyMixSchema } from '../../src/core/training/difficultyMixSchema.js';
import { planStepRollouts, plannedRolloutSettings } from '../../src/core/training/stepPlan.js';
import { dialogueSettings } from '../support/fakeDialogueCalls.js';

const MIX: DifficultyPhase[] = [{ fromStep: 1, simple: 0.2, normal: 0.5, hard: 0.3 }];
const CURRICULUM: DifficultyPhase[] = [
  { fromStep: 1, simple: 1 },
  { fromStep: 50, normal: 0.5, hard: 0.5 },
  { fromStep: 80, hard: 1 },
];

function counts(levels: readonly SimulatorDifficulty[]): Record<SimulatorDifficulty, number> {
  const out = { simple: 0, normal: 0, hard: 0 };
  for (const level of levels) out[level]++;
  return out;
}

/** The config's error lines for a `training.difficultyMix` value. */
function configProblems(value: string): string {
  try {
    loadConfig({ env: {}, set: [`training.difficultyMix=${value}`] });
    return '';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('training: mixing simulator difficulties', () => {
  it('the phase in force at a step: the last that has begun', () => {
    assert.deepEqual(sharesAt(CURRICULUM, 1), { simple: 1 });
    assert.deepEqual(sharesAt(CURRICULUM, 49), { simple: 1 });
    assert.deepEqual(sharesAt(CURRICULUM, 50), { normal: 0.5, hard: 0.5 });
    assert.deepEqual(sharesAt(CURRICULUM, 500), { hard: 1 });
    assert.deepEqual(sharesAt([{ fromStep: 1, simple: 0, normal: 1 }], 3), { normal: 1 }, 'no zero shares');
  });

  it("each step's groups get the levels in its shares (within 2), and the run's come out at the shares", () => {
    for (const seed of [1, 7, 1234]) {
      const all: SimulatorDifficulty[] = [];
      for (let step = 1; step <= 200; step++) {
        const levels = stepDifficulties(MIX, seed, step, 8);
        const c = counts(levels);
        for (const level of SIMULATOR_DIFFICULTIES)
          assert.ok(Math.abs(c[level] - 8 * MIX[0]![level]!) <= 2, `seed ${seed} step ${step}: ${JSON.stringify(c)}`);
        all.push(...levels);
      }
      const total = counts(all);
      // 1,600 groups: within a few of 320 / 800 / 480 (drawing at random would miss by about 20).
      assert.ok(Math.abs(total.simple - 320) <= 4, JSON.stringify(total));
      assert.ok(Math.abs(total.normal - 800) <= 4, JSON.stringify(total));
      assert.ok(Math.abs(total.hard - 480) <= 4, JSON.stringify(total));
    }
  });

  it('which group gets which level follows from (seed, step, position) alone, and differs between seeds', () => {
    assert.deepEqual(stepDifficulties(MIX, 7, 5, 8), stepDifficulties(MIX, 7, 5, 8));
    assert.deepEqual(stepDifficulties(MIX, 7, 5, 8)[3], groupDifficulty(sharesAt(MIX, 5), 7, 4 * 8 + 3));
    const run = (seed: number) => Array.from({ length: 20 }, (_, i) => stepDifficulties(MIX, seed, i + 1, 4)).flat();
    assert.notDeepEqual(run(7), run(8));
    // A curriculum's phases: one level each, every group at that level.
    assert.deepEqual(stepDifficulties(CURRICULUM, 7, 10, 4), ['simple', 'simple', 'simple', 'simple']);
    assert.deepEqual(stepDifficulties(CURRICULUM, 7, 90, 4), ['hard', 'hard', 'hard', 'hard']);
    // Shares a hair under 1 still give every group a level that has a share.
    const under = { simple: 0.1, normal: 0.2, hard: 0.6999999999 };
    for (let i = 0; i < 500; i++) assert.ok(groupDifficulty(under, 3, i) in under);
  });

  it("a step's plan: a scenario's samples (a GRPO group) share its level, which reaches their settings", () => {
    const run = { runName: 'run', seed: 7, scenariosPerStep: 4, samplesPerScenario: 3 };
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const plain = planStepRollouts(run, 2, ids);
    assert.ok(
      plain.every((p) => !('difficulty' in p)),
      'without a mix, the plan is as before',
    );
    const mixed = planStepRollouts({ ...run, difficultyMix: MIX }, 2, ids);
    assert.deepEqual(
      mixed.map(({ difficulty: _level, ...rest }) => rest),
      plain,
    );
    const levels = stepDifficulties(MIX, 7, 2, 4);
    for (const p of mixed) {
      const position = Number(/--s2--(\d)-/.exec(p.rolloutId)![1]);
      assert.equal(p.difficulty, levels[position], p.rolloutId);
    }
    const settings = dialogueSettings();
    for (const p of mixed) {
      const own = plannedRolloutSettings(settings, p).simulator;
      // Normal is no field, as in the inputs of versions before levels.
      assert.equal(own.difficulty, p.difficulty === 'normal' ? undefined : p.difficulty);
      assert.ok(p.difficulty !== 'normal' || !('difficulty' in own));
    }
    assert.equal(plannedRolloutSettings(settings, plain[0]!), settings);
  });

  it('the config refuses a bad mix, naming the field and the phase', () => {
    assert.equal(configProblems('[{"fromStep":1,"simple":0.2,"normal":0.5,"hard":0.3}]'), '');
    assert.match(configProblems('{"simple":1}'), /training\.difficultyMix: a list of phases/);
    assert.match(
      configProblems('[{"fromStep":1,"simple":0.2,"normal":0.5}]'),
      /training\.difficultyMix\.0: the shares of simple, normal and hard sum to 0\.7; they must sum to 1/,
    );
    assert.match(
      configProblems('[{"fromStep":2,"hard":1}]'),
      /training\.difficultyMix\.0\.fromStep: the first phase starts at step 1, not 2/,
    );
    assert.match(
      configProblems('[{"fromStep":1,"hard":1},{"fromStep":1,"simple":1}]'),
      /training\.difficultyMix\.1\.fromStep: phases go forward: step 1 is not after step 1/,
    );
    assert.match(configProblems('[{"fromStep":1,"brutal":1}]'), /training\.difficultyMix\.0\.brutal: unknown key/);
    assert.match(configProblems('[{"fromStep":1,"hard":1.5}]'), /training\.difficultyMix\.0\.hard/);
    assert.ok(!difficultyMixSchema.safeParse([]).success, 'at least one phase');
  });

  it('a run carries its mix to the training workflow; without one, none', () => {
    const mixed = loadConfig({ env: {}, set: ['training.difficultyMix=[{"fromStep":1,"hard":0.5,"simple":0.5}]'] });
    assert.deepEqual(trainingSettingsFromConfig(mixed, 'r').difficultyMix, [{ fromStep: 1, hard: 0.5, simple: 0.5 }]);
    assert.ok(!('difficultyMix' in trainingSettingsFromConfig(loadConfig({ env: {}, set: [] }), 'r')));
  });
});
