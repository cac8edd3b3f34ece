import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  LIVE_FILE,
  readTrainerSettingsSchema,
  renderTrainerSettings,
  ZOD_FILE,
  type TrainerSettingsSchema,
} from '../../scripts/trainer-settings/render.js';
import { ALGORITHMS } from '../../src/core/training/algorithms.js';
import { LIVE_HYPERPARAMETERS } from '../../src/core/training/liveSet.js';
import { TRAINER_ALGORITHMS } from '../../src/core/training/trainerSettings.generated.js';
import { hyperparametersSchema } from '../../src/core/training/trainingSettingsSchema.js';
import { REPO_ROOT } from '../../src/paths.js';

describe('trainer settings generated from trainer/settings.schema.json', () => {
  const schema = readTrainerSettingsSchema(REPO_ROOT);

  it('the generated files are what the generator makes of the checked-in schema', () => {
    const rendered = renderTrainerSettings(schema);
    for (const path of [ZOD_FILE, LIVE_FILE])
      assert.equal(
        readFileSync(join(REPO_ROOT, path), 'utf8'),
        rendered[path],
        `${path} is stale: run npm run generate:settings`,
      );
  });

  it('every trainer hyperparameter can be set from a config, adam_beta1 among them', () => {
    assert.deepEqual(Object.keys(hyperparametersSchema.shape), Object.keys(schema.Hyperparameters.properties));
    assert.ok(hyperparametersSchema.safeParse({ adam_beta1: 0.8 }).success);
    assert.ok(!hyperparametersSchema.safeParse({ adam_beta1: 1 }).success);
  });

  it('the live hyperparameters are the ones the trainer marks x-live', () => {
    const marked = Object.entries(schema.Hyperparameters.properties).filter(([, p]) => p['x-live']);
    assert.deepEqual(
      LIVE_HYPERPARAMETERS,
      marked.map(([name]) => name),
    );
  });

  it('TypeScript knows the algorithms the trainer accepts, no more, no fewer', () => {
    assert.deepEqual([...ALGORITHMS], [...TRAINER_ALGORITHMS]);
  });

  it('a live mark on a non-number or an unknown requirement stops the generator', () => {
    const withHyper = (properties: TrainerSettingsSchema['Hyperparameters']['properties']) => ({
      ...schema,
      Hyperparameters: { properties },
    });
    assert.throws(
      () => renderTrainerSettings(withHyper({ append_eos: { type: 'boolean', 'x-live': true } })),
      /append_eos: only numbers can be live/,
    );
    assert.throws(
      () => renderTrainerSettings(withHyper({ lam: { type: 'number', 'x-live': true, 'x-needs': 'moon' } })),
      /lam: unknown requirement moon/,
    );
  });
});
