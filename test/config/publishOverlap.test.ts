import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { publishesWhileOptimizing } from '../../src/core/training/publishOverlap.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const FIRST_FINISHED = [
  `scenarios.train=${FIXTURE_SCENARIOS}`,
  `scenarios.eval=${FIXTURE_SCENARIOS}`,
  'training.publish.mode=vllm',
  'training.maxStaleness=1',
  'training.stepDialogues=firstFinished',
];
const NCCL = [
  'training.publish.transport=nccl',
  'training.publish.nccl.address=10.0.0.5',
  'training.publish.nccl.port=29551',
];

const overlaps = (set: string[]) =>
  publishesWhileOptimizing(trainingSettingsFromConfig(loadConfig({ env: {}, set }), 'run'));

describe('which runs publish a step while the optimizer trains the next (publishesWhileOptimizing)', () => {
  it('first-finished steps publishing to one vLLM from the exports: full weights over the checkpoint transport, and LoRA', () => {
    assert.equal(overlaps(FIRST_FINISHED), true);
    assert.equal(overlaps([...FIRST_FINISHED, 'training.lora.r=8']), true);
  });

  it('not over NCCL (the trainer sends the weights it holds), not when the trainer serves the policy, not with planned steps, not with a single export kept', () => {
    assert.equal(overlaps([...FIRST_FINISHED, ...NCCL]), false, 'nccl');
    assert.equal(
      overlaps([...FIRST_FINISHED.filter((s) => !s.startsWith('training.publish.mode')), 'training.lora.r=8']),
      false,
      'served by the trainer',
    );
    assert.equal(overlaps(FIRST_FINISHED.filter((s) => !s.startsWith('training.stepDialogues'))), false, 'planned');
    assert.equal(overlaps([...FIRST_FINISHED, 'training.hyperparameters.export_keep=1']), false, 'one export');
  });

  it('to replicas only when they are updated in turn (together, each reload would stop them all under the next step)', () => {
    const replicas =
      'policy.replicas=[{"name": "a", "baseURL": "http://10.0.0.1:8000/v1"}, {"name": "b", "baseURL": "http://10.0.0.2:8000/v1"}]';
    assert.equal(overlaps([...FIRST_FINISHED, replicas]), false, 'every replica at once');
    assert.equal(overlaps([...FIRST_FINISHED, replicas, 'training.publish.replicaUpdates=inTurn']), true, 'in turn');
  });
});
