import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { isValidName, NAME_PATTERN } from '../../src/core/names.js';
import { LIVE_HYPERPARAMETERS } from '../../src/core/training/liveSet.js';
import { ALGORITHMS } from '../../src/core/training/algorithms.js';
import { CREDIT_MODES } from '../../src/core/training/credit.js';
import { hyperparametersSchema, trainingSettingsSchema } from '../../src/core/training/trainingSettingsSchema.js';
import { REPO_ROOT } from '../../src/paths.js';
import { SCHEMA_FILE } from '../../scripts/trainer-settings/render.js';
import { boundsOf, propertiesOf } from '../support/jsonSchemaBounds.js';

/** Names and whether they are valid: run names, for the CLI and the trainer alike. */
const NAMES: [string, boolean][] = [
  ['grpo-nothink', true],
  ['a', true],
  ['7', true],
  ['Run_1.v2-final', true],
  ['grpo-2025-01-31T02-00-00-000', true],
  ['a..b', true],
  ['a'.repeat(128), true],
  ['a'.repeat(129), false],
  ['', false],
  ['.', false],
  ['..', false],
  ['-a', false],
  ['.a', false],
  ['_a', false],
  ['a/b', false],
  ['a@1', false],
  ['a b', false],
  ['a:b', false],
  ['a\n', false],
  ['\na', false],
  ['émotion', false],
  ['ａ', false],
  ['run٣', false],
];

interface TrainerFacts {
  runIdPattern: string;
  runIdMatches: boolean[];
  runCreateAccepts: boolean[];
  schemas: Record<'Hyperparameters' | 'StepOverrides' | 'LoraSpec' | 'RunCreate', unknown>;
  settingsSchemaText: string;
  creditModes: string[];
}

/** Asks the trainer's own code (this checkout's, not an installed copy) for its rules. */
function trainerFacts(names: string[]): TrainerFacts {
  const script = `
import json, sys
from pydantic import ValidationError
from attune_trainer.contract.schemas import CREDIT_MODES, RUN_ID_RE, Hyperparameters, LoraSpec, RunCreate, StepOverrides
from attune_trainer.service.settings_schema import settings_schema_text

def accepted(name):
    try:
        RunCreate(run_id=name, base_model="tiny-random", algorithm="grpo")
        return True
    except ValidationError:
        return False

names = json.load(sys.stdin)
print(json.dumps({
    "runIdPattern": RUN_ID_RE.pattern,
    "runIdMatches": [RUN_ID_RE.match(n) is not None for n in names],
    "runCreateAccepts": [accepted(n) for n in names],
    "schemas": {m.__name__: m.model_json_schema() for m in (Hyperparameters, StepOverrides, LoraSpec, RunCreate)},
    "settingsSchemaText": settings_schema_text(),
    "creditModes": list(CREDIT_MODES),
}))
`;
  const pythonPath = [join(REPO_ROOT, 'trainer', 'src'), process.env.PYTHONPATH].filter(Boolean).join(':');
  const out = execFileSync(join(REPO_ROOT, '.venv', 'bin', 'python'), ['-c', script], {
    input: JSON.stringify(names),
    env: { ...process.env, PYTHONPATH: pythonPath },
    encoding: 'utf8',
  });
  return JSON.parse(out) as TrainerFacts;
}

describe('contracts with the trainer', () => {
  let trainer: TrainerFacts;
  before(function () {
    this.timeout(60_000);
    trainer = trainerFacts(NAMES.map(([name]) => name));
  });

  describe('run names', () => {
    it('the trainer checks the same pattern ($ in TypeScript is \\Z in Python)', () => {
      assert.equal(trainer.runIdPattern.replace(/\\Z$/, '$'), NAME_PATTERN.source);
    });
    it('both sides accept exactly the valid names of the table', () => {
      NAMES.forEach(([name, valid], i) => {
        const shown = JSON.stringify(name);
        assert.equal(isValidName(name), valid, `TypeScript: ${shown}`);
        assert.equal(trainer.runIdMatches[i], valid, `trainer RUN_ID_RE: ${shown}`);
        assert.equal(trainer.runCreateAccepts[i], valid, `trainer RunCreate: ${shown}`);
        assert.equal(
          trainingSettingsSchema.shape.runName.safeParse(name).success,
          valid,
          `training settings: ${shown}`,
        );
      });
    });
  });

  describe('credit', () => {
    it('the orchestrator offers exactly the credit modes the trainer assigns', () => {
      assert.deepEqual(trainer.creditModes, [...CREDIT_MODES]);
    });
  });

  describe("settings: the trainer's models are the source, the orchestrator derives from them", () => {
    it("the checked-in settings schema is what the trainer's models produce now", () => {
      assert.equal(
        readFileSync(join(REPO_ROOT, SCHEMA_FILE), 'utf8'),
        trainer.settingsSchemaText,
        `${SCHEMA_FILE} is stale: run npm run generate:settings`,
      );
    });
    it("the algorithms are the ones the trainer's RunCreate accepts", () => {
      const algorithm = propertiesOf(trainer.schemas.RunCreate).algorithm as { enum?: string[] };
      assert.deepEqual([...ALGORITHMS], algorithm.enum);
    });
    it('live changes (StepOverrides) are the live hyperparameters, with the same bounds', () => {
      const py = propertiesOf(trainer.schemas.StepOverrides);
      const zodHyper = propertiesOf(z.toJSONSchema(hyperparametersSchema));
      assert.deepEqual(Object.keys(py).sort(), [...LIVE_HYPERPARAMETERS].sort());
      for (const name of LIVE_HYPERPARAMETERS) {
        assert.deepEqual(boundsOf(py[name]!), boundsOf(zodHyper[name]!), `StepOverrides.${name}`);
      }
    });
    it('the run seed has the same bounds', () => {
      const py = propertiesOf(trainer.schemas.RunCreate);
      assert.deepEqual(boundsOf(py.seed!), boundsOf(z.toJSONSchema(trainingSettingsSchema.shape.seed)));
    });
  });
});
