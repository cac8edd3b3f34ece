import assert from 'node:assert/strict';
import { DIALOGUE_KEYS } from '../../src/core/dialogueKeys.js';
import { rewardEnvironment } from '../../src/core/evaluationManifest.js';
import { dialogueFields } from '../../src/core/rolloutSettingsSchema.js';
import { trackedParams } from '../../src/core/tracking/trackedValues.js';
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

  it("DIALOGUE_KEYS, the workflows' zod-free list, names exactly the fields dialogueFields declares, in its order", () => {
    assert.deepEqual([...DIALOGUE_KEYS], Object.keys(dialogueFields({ initialEmotion: 0, maxTurns: 1 })));
  });

  it("every dialogue setting reaches a run's tracked params and the evaluation manifest's protocol", () => {
    const training = trainingSettingsFromConfig(
      loadConfig({
        env: {},
        set: [
          ...SCENARIOS,
          'training.dialogue.initialEmotion=25',
          'training.dialogue.maxTurns=4',
          'training.dialogue.think=true',
        ],
      }),
      'r',
    );
    const params = trackedParams(training);
    const protocol: Record<string, unknown> = rewardEnvironment(training.rollout).protocol;
    for (const key of Object.keys(dialogueKeysOf(training.rollout))) {
      const value = (training.rollout as Record<string, unknown>)[key];
      assert.equal(params[`rollout.${key}`], JSON.stringify(value), `tracked param rollout.${key}`);
      assert.equal(protocol[key], value, `manifest protocol.${key}`);
    }
  });
});
