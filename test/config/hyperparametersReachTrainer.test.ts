import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOptimizerActivities } from '../../src/activities/optimizer.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { ensureTrainerRun } from '../../src/workflows/trainingStep.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

describe('trainer hyperparameters from a config file', () => {
  let server: Server;
  let url = '';
  const bodies: unknown[] = [];

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        bodies.push(JSON.parse(body));
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ run_id: 'adam', step: 0 }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it('adam_beta1, once unknown to the config, reaches the trainer in the run-create request', async () => {
    const config = loadConfig({
      env: {},
      set: [
        `home=${mkdtempSync(join(tmpdir(), 'attune-hyper-'))}`,
        `trainer.url=${url}`,
        `scenarios.train=${FIXTURE_SCENARIOS}`,
        'training.hyperparameters.adam_beta1=0.8',
        'training.hyperparameters.is_truncation=3',
      ],
    });
    const settings = trainingSettingsFromConfig(config, 'adam');
    const optimizer = createOptimizerActivities(new FileArtifactStore(join(config.home, 'artifacts')));
    // The workflow's own mapping from settings to the request, with the activity called directly.
    await ensureTrainerRun(optimizer as unknown as Parameters<typeof ensureTrainerRun>[0], settings);
    assert.equal(bodies.length, 1);
    const body = bodies[0] as { run_id: string; hyperparameters: Record<string, unknown> };
    assert.equal(body.run_id, 'adam');
    assert.deepEqual(body.hyperparameters, { adam_beta1: 0.8, is_truncation: 3 });
  });

  it('a value the trainer would refuse is refused when the config is loaded', () => {
    assert.throws(
      () =>
        loadConfig({ env: {}, set: [`scenarios.train=${FIXTURE_SCENARIOS}`, 'training.hyperparameters.adam_beta1=1'] }),
      /adam_beta1/,
    );
  });

  describe('training.snapshotEvery and the exports a publish reads', () => {
    const settingsOf = (...set: string[]) =>
      trainingSettingsFromConfig(loadConfig({ env: {}, set: [`scenarios.train=${FIXTURE_SCENARIOS}`, ...set] }), 'snap')
        .trainer.hyperparameters;

    it('reaches the trainer as snapshot_every; on-policy training served by the trainer keeps no exports', () => {
      assert.deepEqual(settingsOf('training.snapshotEvery=5'), { snapshot_every: 5 });
      assert.deepEqual(settingsOf(), {});
    });

    it('keeps the exports that a vLLM publish (publish.keep) and the staleness window read', () => {
      const vllm = ['training.publish.mode=vllm', 'policy.baseURL=http://127.0.0.1:9/v1', 'policy.model=m'];
      assert.equal(settingsOf(...vllm).export_keep, 2); // publish.keep's default
      assert.equal(settingsOf(...vllm, 'training.publish.keep=3').export_keep, 3);
      assert.equal(settingsOf(...vllm, 'training.lora.r=8', 'training.maxStaleness=3').export_keep, 4);
      assert.equal(settingsOf('training.maxStaleness=1').export_keep, 2);
    });

    it('refuses snapshotEvery and hyperparameters.snapshot_every that disagree, naming both', () => {
      assert.throws(
        () => settingsOf('training.snapshotEvery=5', 'training.hyperparameters.snapshot_every=2'),
        /training\.snapshotEvery \(5\) and training\.hyperparameters\.snapshot_every \(2\) differ/,
      );
      assert.throws(() => settingsOf('training.snapshotEvery=0'), /snapshotEvery/);
    });
  });
});
