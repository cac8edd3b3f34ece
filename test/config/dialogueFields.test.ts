import assert from 'node:assert/strict';
import { dialogueFields } from '../../src/core/rolloutSettingsSchema.js';
import { buildEvaluationInput } from '../../src/config/evaluationInputFromConfig.js';
import { loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const SCENARIOS = [`scenarios.train=${FIXTURE_SCENARIOS}`, `scenarios.eval=${FIXTURE_SCENARIOS}`];

/** The dialogue settings of a rollout settings object, by the names the declaration gives. */
function dialogueKeysOf(settings: object): Record<string, unknown> {
  const keys = Object.keys(dialogueFields({ initialEmotion: 0, maxTurns: 1 }));
  return Object.fromEntries(Object.entries(settings).filter(([key]) => keys.includes(key)));
}

describe('config: the dialogue settings, declared once, reach the dialogues of each section', () => {
  it('rollout, training and evaluation each hand their own initialEmotion, maxTurns and think to their rollouts', () => {
    const config = loadConfig({
      env: {},
      set: [
        ...SCENARIOS,
        'rollout.dialogue.initialEmotion=41',
        'rollout.dialogue.maxTurns=3',
        'rollout.dialogue.think=false',
        'training.dialogue.initialEmotion=25',
        'training.dialogue.maxTurns=4',
        'training.dialogue.think=true',
        'training.evalEvery=1',
        'evaluation.dialogue.initialEmotion=45',
        'evaluation.dialogue.maxTurns=5',
      ],
    });
    assert.deepEqual(dialogueKeysOf(rolloutSettingsFromConfig(config)), {
      initialEmotion: 41,
      maxTurns: 3,
      think: false,
    });
    const training = trainingSettingsFromConfig(config, 'r');
    assert.deepEqual(dialogueKeysOf(training.rollout), { initialEmotion: 25, maxTurns: 4, think: true });
    // A run's evaluations keep the evaluation protocol, with the run's think.
    assert.deepEqual(dialogueKeysOf(training.evalSettings!), { initialEmotion: 45, maxTurns: 5, think: true });
    // An evaluation outside a run takes rollout.dialogue.think unless evaluation.dialogue.think is set.
    assert.deepEqual(dialogueKeysOf(buildEvaluationInput(config, { split: 'eval' }).settings), {
      initialEmotion: 45,
      maxTurns: 5,
      think: false,
    });
  });
});
