import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { configFolder, FLAT_CREDIT_YAML, NESTED_CREDIT_YAML } from '../support/flatCreditConfig.js';
import { assertSameEssentials, essentials } from '../support/runEssentials.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

// Simulator answers depend only on the request, so every run of the same seed sees the same dialogues;
// the emotion changes vary by turn, so per-turn credit differs from the dialogue's reward.
const BEHAVIOUR = { analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }) };
const STEPS = 2;

describe('training: a config with the flat credit keys trains exactly as the nested form does', function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;
  after(async () => {
    await rig?.close();
  });

  it('flat training.credit / turnDiscount / creditWeight: the same rollouts, per-turn returns and trainer metrics as training.credit { mode, turnDiscount, weight }', async () => {
    rig = await createTrainingRig({ set: TINY_TRAINING('grpo', STEPS), behaviour: BEHAVIOUR });
    const dir = configFolder({ 'flat.yaml': FLAT_CREDIT_YAML, 'nested.yaml': NESTED_CREDIT_YAML });
    const warnings: string[] = [];
    const configOf = (name: string) =>
      loadConfig({ file: join(dir, name), env: {}, set: rig!.configSet, onWarning: (w) => warnings.push(w) });
    const runs = { nested: configOf('nested.yaml'), flat: configOf('flat.yaml') };
    assert.equal(warnings.length, 3, 'one warning per flat key');
    await rig.startWorkers();
    const recorded: Record<string, Awaited<ReturnType<TrainingRig['metrics']>>> = {};
    for (const [name, config] of Object.entries(runs)) {
      const { handle } = await rig.start(`credit-${name}`, config);
      assert.equal((await handle.result()).stepsApplied, STEPS);
      recorded[name] = await rig.metrics(`credit-${name}`);
    }
    const { flat, nested } = recorded as Record<'flat' | 'nested', NonNullable<(typeof recorded)[string]>>;
    assert.equal(nested.length, STEPS);
    // The per-turn returns are what the credit settings shape: a dropped discount or weight moves them.
    assert.deepEqual(
      flat.map((m) => m.turnReturn),
      nested.map((m) => m.turnReturn),
    );
    assert.notDeepEqual(
      nested.map((m) => m.turnReturn),
      nested.map((m) => m.turnReward),
      'mixed credit trains on other figures than the turn rewards',
    );
    assertSameEssentials(essentials(flat), essentials(nested), 'flat vs nested credit keys');
  });
});
